"""Alembic revisions of the control plane's schema."""
