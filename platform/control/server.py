"""Running the service: checks first, so that a misconfiguration is one clear line, then uvicorn."""

import uvicorn
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.main import startup_problem
from atoll.platform.control.migrate import upgrade
from atoll.platform.core.errors import AtollError
from atoll.registry.db import Database, describe_url


def preflight(settings: ControlSettings, migrate: bool = False) -> None:
    """Raises AtollError, saying what to do, when the service must not start."""
    url = settings.resolved_database_url
    database = Database(url, pool_size=1)
    try:
        if migrate:
            upgrade(url)
        problem = startup_problem(settings, database)
    except SQLAlchemyError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise AtollError(
            f"cannot use the control plane's database at {describe_url(url)}: {first}"
        ) from e
    finally:
        database.dispose()
    if problem:
        raise AtollError(problem)


def serve(
    settings: ControlSettings,
    host: str,
    port: int,
    migrate: bool = False,
    log_level: str = "info",
    access_log: bool = True,
) -> None:
    """One process: the dispatcher is the single writer of job states (no workers)."""
    preflight(settings, migrate)
    uvicorn.run(
        "atoll.platform.control.main:create_app",
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        server_header=False,
    )
