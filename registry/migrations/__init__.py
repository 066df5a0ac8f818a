"""Alembic environment and revisions for the registry's schema."""
