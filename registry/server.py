"""Running the service: checks first, so that a misconfiguration is one clear line, then uvicorn."""

import os
import tempfile

import uvicorn
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.core.errors import AtollError
from atoll.registry.core.config import RegistrySettings
from atoll.registry.db import Database, describe_url
from atoll.registry.main import startup_problem
from atoll.registry.migrate import upgrade


def preflight(settings: RegistrySettings, migrate: bool = False) -> None:
    """Raises AtollError, saying what to do, when the service must not start."""
    url = settings.resolved_database_url
    database = Database(url, pool_size=1)
    try:
        if migrate:
            upgrade(url)
        problem = startup_problem(settings, database)
    except SQLAlchemyError as e:
        raise AtollError(
            f"cannot use the registry database at {describe_url(url)}: {_first_line(e)}"
        ) from e
    finally:
        database.dispose()
    if problem:
        raise AtollError(problem)


def serve(
    settings: RegistrySettings,
    host: str,
    port: int,
    workers: int = 1,
    migrate: bool = False,
    log_level: str = "info",
    access_log: bool = True,
) -> None:
    preflight(settings, migrate)
    if workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        # Worker processes share their counters through files here (prometheus_client's
        # multiprocess mode), so /metrics adds up every worker whichever one answers.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="atoll-registry-metrics-")
    uvicorn.run(
        "atoll.registry.main:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=access_log,
        server_header=False,
    )


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
