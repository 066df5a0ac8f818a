"""A real registry for the integration tests: `atoll registry serve` in a process of its own,
on loopback, over a real database. Every test runs once per backend: SQLite always, and
PostgreSQL when there is one (ATOLL_TEST_DATABASE_URL, which CI sets, else one answering at
its default local address), in a schema of its own that is dropped afterwards, so parallel
runs on the same database never meet."""

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import support
from integration.registry.service import (
    ADMIN,
    LIMITS,
    TABLES,
    DatabaseFactory,
    Registry,
    Service,
)
from sqlalchemy import text
from support import NO_POSTGRES, require

from atoll.localstack.registry import (
    ServerProcess,
    postgres_schema,
    scratch_database,
)
from atoll.platform.service.database import make_engine


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="session")
def postgres_url(backend: str) -> str | None:
    """The PostgreSQL database to make schemas in, or None on the SQLite run."""
    if backend == "sqlite":
        return None
    url = support.postgres_url()
    require(url is not None, NO_POSTGRES)
    return url


@pytest.fixture(scope="session")
def fresh_database(
    backend: str, postgres_url: str | None, tmp_path_factory: pytest.TempPathFactory
) -> DatabaseFactory:
    """Makes migrated, empty databases on this backend (a context manager per database)."""
    return partial(scratch_database, tmp_path_factory.mktemp(f"registry-{backend}"), postgres_url)


@pytest.fixture
def empty_database(postgres_url: str | None, tmp_path: Path) -> Iterator[str]:
    """A database with no schema at all: a new SQLite file, or a new PostgreSQL schema."""
    if postgres_url is None:
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    with postgres_schema(postgres_url, "test") as url:
        yield url


@pytest.fixture(scope="session")
def service(
    fresh_database: DatabaseFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    log = tmp_path_factory.mktemp("registry-log") / "server.log"
    with fresh_database() as url, ServerProcess(url, ADMIN, log, env=LIMITS) as server:
        engine = make_engine(url, pool_size=2)
        try:
            yield Service(server.url, url, engine, server)
        finally:
            engine.dispose()


@pytest.fixture
def registry(service: Service) -> Iterator[Registry]:
    for table in TABLES:
        with service.engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {table}"))
    helper = Registry(service)
    yield helper
    for client in helper.clients:
        client.close()
