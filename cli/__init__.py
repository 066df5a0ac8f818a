"""The `atoll` command line."""
