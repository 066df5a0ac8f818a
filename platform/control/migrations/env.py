"""Alembic's entry point for the control plane's schema: `atoll control migrate` passes the
URL in the config's attributes; without it, ATOLL_DATABASE_URL and friends decide."""

from alembic import context

from atoll.platform.control.core.config import control_settings
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.control.models import Base
from atoll.platform.service.schema import run_migrations

url = context.config.attributes.get("database_url") or control_settings().resolved_database_url
# A database shared with the registry holds its tables too: leave them alone.
run_migrations(url, Base.metadata, SCHEMA.version_table, only_tables="control_")
