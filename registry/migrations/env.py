"""Alembic's entry point: `atoll registry migrate` sets the URL in the config's attributes;
the alembic command line (`alembic -c registry/alembic.ini ...`) falls back to ATOLL_*."""

from alembic import context

from atoll.platform.service.schema import run_migrations
from atoll.registry.core.config import registry_settings
from atoll.registry.migrate import SCHEMA
from atoll.registry.models import Base

url = context.config.attributes.get("database_url") or registry_settings().resolved_database_url
run_migrations(url, Base.metadata, SCHEMA.version_table)
