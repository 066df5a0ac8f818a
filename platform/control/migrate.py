"""The control plane's schema under Alembic, driven from code (`atoll control migrate`).

Its revisions are recorded in a version table of its own, so that it can live in the
registry's database without either one mistaking the other's revisions for its own.
"""

from dataclasses import dataclass

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from atoll.registry.db import describe_url, make_engine

SCRIPT_LOCATION = "atoll.platform.control:migrations"
VERSION_TABLE = "control_alembic_version"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["database_url"] = database_url  # not an ini option: '%' would break it
    return config


@dataclass(frozen=True)
class SchemaState:
    url: str
    current: tuple[str, ...]
    head: tuple[str, ...]

    def problem(self) -> str | None:
        """Why the service must not run on this database, or None when it may."""
        if set(self.current) == set(self.head):
            return None
        where = describe_url(self.url)
        if not self.current:
            return (
                f"the control plane's database at {where} has no schema yet; "
                "run `atoll control migrate` (or `atoll control serve --migrate`) first"
            )
        if not set(self.current) <= {r.revision for r in _script().walk_revisions()}:
            return (
                f"the control plane's database at {where} is at revision "
                f"{', '.join(self.current)}, which this version of Atoll does not know"
            )
        return (
            f"the control plane's database at {where} is at revision {', '.join(self.current)} "
            f"but this version of Atoll needs {', '.join(self.head)}; run `atoll control migrate`"
        )


def schema_state(engine: Engine) -> SchemaState:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        current = context.get_current_heads()
    url = engine.url.render_as_string(hide_password=False)
    return SchemaState(url, tuple(current), tuple(_script().get_heads()))


def upgrade(database_url: str, revision: str = "head") -> tuple[SchemaState, SchemaState]:
    """Migrate to `revision`; returns the state before and after."""
    engine = make_engine(database_url, pool_size=1)
    try:
        before = schema_state(engine)
        command.upgrade(alembic_config(database_url), revision)
        return before, schema_state(engine)
    finally:
        engine.dispose()


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(""))
