"""Alembic, driven from code: the scripts ship inside the package, so `atoll registry
migrate` works from an installed wheel with no alembic.ini around."""

from dataclasses import dataclass

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from atoll.registry.db import describe_url, make_engine

SCRIPT_LOCATION = "atoll.registry:migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    # Passed as an attribute, not as sqlalchemy.url: the ini parser would choke on a '%'.
    config.attributes["database_url"] = database_url
    return config


@dataclass(frozen=True)
class SchemaState:
    url: str
    current: tuple[str, ...]
    head: tuple[str, ...]

    @property
    def is_current(self) -> bool:
        return set(self.current) == set(self.head)

    def problem(self) -> str | None:
        """Why the service must not run on this database, or None when it may."""
        where = describe_url(self.url)
        if self.is_current:
            return None
        if not self.current:
            return (
                f"the registry database at {where} has no schema yet; "
                "run `atoll registry migrate` first"
            )
        known = set(self.current) <= set(_all_revisions())
        if not known:
            return (
                f"the registry database at {where} is at revision {', '.join(self.current)}, "
                "which this version of Atoll does not know; upgrade Atoll"
            )
        return (
            f"the registry database at {where} is at revision {', '.join(self.current)} "
            f"but this version of Atoll needs {', '.join(self.head)}; "
            "run `atoll registry migrate`"
        )


def schema_state(engine: Engine) -> SchemaState:
    url = engine.url.render_as_string(hide_password=False)
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_heads()
    return SchemaState(url, tuple(current), tuple(_script().get_heads()))


def upgrade(database_url: str, revision: str = "head") -> tuple[SchemaState, SchemaState]:
    """Migrate the database to `revision`; returns its state before and after."""
    engine = make_engine(database_url, pool_size=1)
    try:
        before = schema_state(engine)
        command.upgrade(alembic_config(database_url), revision)
        return before, schema_state(engine)
    finally:
        engine.dispose()


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(""))


def _all_revisions() -> list[str]:
    return [r.revision for r in _script().walk_revisions()]
