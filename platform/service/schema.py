"""A service's tables under Alembic, driven from code: the scripts ship inside the
package, so `atoll registry migrate` and `atoll control migrate` work from an installed
wheel with no alembic.ini around. Each service records its revisions in a version table
of its own, so both can share one database."""

from dataclasses import dataclass
from typing import Any

from alembic import command, context
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, MetaData, text
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.service.database import Database, describe_url, make_engine
from atoll.platform.service.schemas import Readiness


@dataclass(frozen=True)
class AlembicSchema:
    database: str  # for messages: "the registry database"
    script_location: str  # "package:folder"
    migrate: str  # what the operator runs: "`atoll registry migrate`"
    version_table: str = "alembic_version"

    def config(self, database_url: str) -> Config:
        config = Config()
        config.set_main_option("script_location", self.script_location)
        # An attribute, not sqlalchemy.url: the ini parser would choke on a '%'.
        config.attributes["database_url"] = database_url
        return config

    def state(self, engine: Engine) -> "SchemaState":
        url = engine.url.render_as_string(hide_password=False)
        with engine.connect() as conn:
            opts = {"version_table": self.version_table}
            current = MigrationContext.configure(conn, opts=opts).get_current_heads()
        return SchemaState(self, url, tuple(current), tuple(self._script().get_heads()))

    def upgrade(
        self, database_url: str, revision: str = "head"
    ) -> tuple["SchemaState", "SchemaState"]:
        """Migrate the database to `revision`; returns its state before and after."""
        engine = make_engine(database_url, pool_size=1)
        try:
            before = self.state(engine)
            command.upgrade(self.config(database_url), revision)
            return before, self.state(engine)
        finally:
            engine.dispose()

    def revisions(self) -> set[str]:
        return {r.revision for r in self._script().walk_revisions()}

    def _script(self) -> ScriptDirectory:
        return ScriptDirectory.from_config(self.config(""))


@dataclass(frozen=True)
class SchemaState:
    schema: AlembicSchema
    url: str
    current: tuple[str, ...]
    head: tuple[str, ...]

    @property
    def is_current(self) -> bool:
        return set(self.current) == set(self.head)

    def problem(self) -> str | None:
        """Why the service must not run on this database, or None when it may."""
        if self.is_current:
            return None
        where = f"{self.schema.database} at {describe_url(self.url)}"
        if not self.current:
            return f"{where} has no schema yet; run {self.schema.migrate} first"
        at = f"{where} is at revision {', '.join(self.current)}"
        if not set(self.current) <= self.schema.revisions():
            return f"{at}, which this version of Atoll does not know; upgrade Atoll"
        return (
            f"{at} but this version of Atoll needs {', '.join(self.head)}; "
            f"run {self.schema.migrate}"
        )


def readiness(database: Database, schema: AlembicSchema) -> Readiness:
    """/readyz as far as the database goes: reachable, and its schema what this code needs."""
    try:
        with database.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        state = schema.state(database.engine)
    except SQLAlchemyError as e:
        reason = f"unreachable: {type(e).__name__}"
        return Readiness(
            status="not_ready",
            database=reason,
            schema_revision=[],
            schema_head=[],
            problem=f"the database is {reason}",
        )
    problem = state.problem()
    return Readiness(
        status="not_ready" if problem else "ready",
        database=database.backend,
        schema_revision=list(state.current),
        schema_head=list(state.head),
        problem=problem,
    )


def run_migrations(
    database_url: str, metadata: MetaData, version_table: str, only_tables: str | None = None
) -> None:
    """The body of a service's migrations/env.py. `only_tables`: a table-name prefix, so
    that autogenerate leaves another service's tables in a shared database alone."""

    def include_name(name: str | None, type_: str, _parents: dict[str, str | None]) -> bool:
        return only_tables is None or type_ != "table" or (name or "").startswith(only_tables)

    options: dict[str, Any] = {
        "target_metadata": metadata,
        "version_table": version_table,
        "include_name": include_name,
    }
    if context.is_offline_mode():
        context.configure(url=database_url, literal_binds=True, **options)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(database_url, pool_size=1)
    try:
        with engine.connect() as connection:
            # render_as_batch: SQLite alters tables by copying them
            context.configure(
                connection=connection, render_as_batch=True, compare_type=True, **options
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()
