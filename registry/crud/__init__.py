"""Reads and writes of the registry's records, one module per resource. No HTTP here:
functions take a session and validated input, and raise `core.errors` on refusal."""
