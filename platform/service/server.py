"""Before a service serves: the checks that turn a misconfiguration into one clear line."""

from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.core.errors import AtollError
from atoll.platform.service.database import Database, describe_url
from atoll.platform.service.schema import AlembicSchema
from atoll.platform.service.settings import ServiceSettings


class StartupRefused(RuntimeError):
    """The service must not run as configured; the message says why and what to do."""


def startup_problem(
    settings: ServiceSettings, database: Database, schema: AlembicSchema
) -> str | None:
    return settings.admin_token_problem() or schema.state(database.engine).problem()


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
