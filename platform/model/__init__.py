"""The model zoo: small models chosen by name."""
