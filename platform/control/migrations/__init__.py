"""The control plane's Alembic environment and revisions (shipped in the package)."""
