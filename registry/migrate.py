"""The registry's schema under Alembic (`atoll registry migrate`)."""

from atoll.platform.service.schema import AlembicSchema

SCHEMA = AlembicSchema(
    database="the registry database",
    script_location="atoll.registry:migrations",
    migrate="`atoll registry migrate`",
)
