"""What `atoll registry` and `atoll control` share: serving the service and migrating its
database. A service is named by where its parts are, so that the commands import them
only when they run."""

import importlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import typer

from atoll.platform.core.errors import AtollError


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


@dataclass(frozen=True)
class Service:
    database: str  # for messages: "the registry database"
    app: str  # "module:factory" of its FastAPI app
    settings: str  # "module:function" that reads its settings
    schema: str  # "module:attribute" of its AlembicSchema

    def load(self, where: str) -> Any:
        module, _, name = where.partition(":")
        return getattr(importlib.import_module(module), name)


Host = Annotated[str, typer.Option(help="Address to listen on.")]
Port = Annotated[int, typer.Option(min=1, max=65535)]
Migrate = Annotated[bool, typer.Option(help="Migrate the database first (as `... migrate`).")]
Level = Annotated[LogLevel, typer.Option()]
AccessLog = Annotated[bool, typer.Option(help="Log every request.")]


def serve(
    service: Service,
    host: str,
    port: int,
    migrate: bool,
    log_level: LogLevel,
    access_log: bool,
    workers: int = 1,
) -> None:
    from atoll.platform.service.server import run_server

    settings, schema = service.load(service.settings)(), service.load(service.schema)
    run_server(
        service.app, settings, schema, host=host, port=port, workers=workers, migrate=migrate,
        log_level=log_level.value, access_log=access_log,
    )  # fmt: skip


def add_migrate_command(app: typer.Typer, service: Service) -> None:
    @app.command("migrate")
    def migrate(
        database_url: Annotated[
            str | None, typer.Option(help="SQLAlchemy URL (else $ATOLL_DATABASE_URL).")
        ] = None,
        revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
    ) -> None:
        """Create or upgrade the database schema (Alembic)."""
        from sqlalchemy.exc import SQLAlchemyError

        from atoll.platform.service.database import describe_url

        url = database_url or service.load(service.settings)().resolved_database_url
        try:
            before, after = service.load(service.schema).upgrade(url, revision)
        except SQLAlchemyError as e:
            problem = str(e).splitlines()[0]
            where = describe_url(url)
            raise AtollError(f"cannot migrate {service.database} at {where}: {problem}") from e
        was, now = ", ".join(before.current) or "empty", ", ".join(after.current) or "empty"
        verb = "already at" if before.current == after.current else f"migrated from {was} to"
        print(f"{describe_url(url)}: {verb} {now}")
