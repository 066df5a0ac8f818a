"""Running a service: first the checks that turn a misconfiguration into one clear line,
then uvicorn."""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.core.errors import AtollError
from atoll.platform.service.database import Database, describe_url
from atoll.platform.service.schema import AlembicSchema
from atoll.platform.service.settings import ServiceSettings, TlsSettings


class StartupRefused(RuntimeError):
    """The service must not run as configured; the message says why and what to do."""


def startup_problem(
    settings: ServiceSettings, database: Database, schema: AlembicSchema
) -> str | None:
    return settings.admin_token_problem() or schema.state(database.engine).problem()


@contextmanager
def checked_database(settings: ServiceSettings, schema: AlembicSchema) -> Iterator[Database]:
    """A service's database, once startup_problem finds nothing (else StartupRefused);
    disposed on the way out."""
    database = Database(settings.resolved_database_url, settings.db_pool_size)
    try:
        problem = startup_problem(settings, database, schema)
        if problem:
            raise StartupRefused(problem)
        yield database
    finally:
        database.dispose()


def preflight(settings: ServiceSettings, schema: AlembicSchema, migrate: bool = False) -> None:
    """Raises AtollError, saying what to do, when the service must not start."""
    url = settings.resolved_database_url
    database = Database(url, pool_size=1)
    try:
        if migrate:
            schema.upgrade(url)
        problem = startup_problem(settings, database, schema)
    except SQLAlchemyError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise AtollError(f"cannot use {schema.database} at {describe_url(url)}: {first}") from e
    finally:
        database.dispose()
    if problem:
        raise AtollError(problem)


def run_server(
    app_factory: str,
    settings: ServiceSettings,
    schema: AlembicSchema,
    *,
    host: str,
    port: int,
    migrate: bool = False,
    log_level: str = "info",
    access_log: bool = True,
    workers: int = 1,
) -> None:
    """Check, then serve the app `app_factory` ("module:function") makes, until stopped."""
    preflight(settings, schema, migrate)
    if workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        # Worker processes share their counters through files here (prometheus_client's
        # multiprocess mode), so /metrics adds up every worker whichever one answers.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="atoll-metrics-")
    serve_app(
        app_factory, host=host, port=port, workers=workers, log_level=log_level,
        access_log=access_log,
    )  # fmt: skip


def serve_app(
    app_factory: str,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    access_log: bool = True,
    workers: int = 1,
) -> None:
    """Serve the app `app_factory` ("module:function") makes with uvicorn, until stopped:
    every Atoll HTTP service (the registry, the control plane, the dashboard) runs here.
    Over HTTPS when ATOLL_TLS_CERT_FILE and ATOLL_TLS_KEY_FILE are set."""
    tls = TlsSettings()
    files = tls.files()
    uvicorn.run(
        app_factory,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=access_log,
        server_header=False,
        ssl_certfile=str(files[0]) if files else None,
        ssl_keyfile=str(files[1]) if files else None,
    )
