"""The control plane's schema under Alembic (`atoll control migrate`), recorded in a
version table of its own so that it can live in the registry's database."""

from atoll.platform.service.schema import AlembicSchema

SCHEMA = AlembicSchema(
    database="the control plane's database",
    script_location="atoll.platform.control:migrations",
    migrate="`atoll control migrate` (or `atoll control serve --migrate`)",
    version_table="control_alembic_version",
)
