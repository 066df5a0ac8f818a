"""Reads and writes of the control plane's tables, one module per kind of record."""
