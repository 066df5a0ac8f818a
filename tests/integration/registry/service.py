"""The running registry the integration tests talk to, and what they share."""

import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, text

from atoll.localstack.registry import ServerProcess
from atoll.platform.service.sql import utcnow
from atoll.registry.client import RegistryClient
from atoll.registry.models import Base
from atoll.registry.schemas import SiteCreated

ADMIN = "test-admin-" + secrets.token_hex(12)
# Small limits, so that tests reach them with small requests.
LIMITS = {
    "ATOLL_REPORT_RETENTION": "5",
    "ATOLL_MAX_CLASSES": "64",
    "ATOLL_MAX_NEIGHBOURS": "50",
    # Neighbour answers read afresh, so that tests see each report at once (the cache is
    # tested on its own, and the benchmark runs with it).
    "ATOLL_NEIGHBOUR_CACHE_S": "0",
}
PRIORS = [5, 3, 2]
SIGNATURE = "sha256:cafe01"
TABLES = [t.name for t in reversed(Base.metadata.sorted_tables)]  # children first

DatabaseFactory = Callable[[], AbstractContextManager[str]]


@contextmanager
def two_processes(
    fresh_database: DatabaseFactory, folder: Path, env: dict[str, str]
) -> Iterator[tuple[str, ServerProcess, ServerProcess, RegistryClient]]:
    """Two server processes on one fresh database (what each process caches, and how it
    follows the other's changes): the database URL, both, and an admin client of one."""
    with (
        fresh_database() as url,
        ServerProcess(url, ADMIN, folder / "one", env=env) as one,
        ServerProcess(url, ADMIN, folder / "two", env=env) as two,
        RegistryClient(one.url, ADMIN) as admin,
    ):
        yield url, one, two, admin


@dataclass
class Service:
    url: str
    database_url: str
    engine: Engine
    server: ServerProcess


@dataclass
class Registry:
    """The running service, emptied before each test, and ways to talk to it."""

    service: Service
    clients: list[RegistryClient] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.service.url

    def client(self, token: str | None = ADMIN) -> RegistryClient:
        client = RegistryClient(self.url, token, timeout_s=30, backoff_s=0.05)
        self.clients.append(client)
        return client

    @property
    def admin(self) -> RegistryClient:
        return self.client(ADMIN)

    def site(
        self, name: str | None = None, region: str = "eu-west-1", priors: list[float] | None = None
    ) -> tuple[SiteCreated, RegistryClient]:
        """A registered site and a client holding its token; it reports `priors` if given."""
        created = self.admin.register_site(name or f"site-{secrets.token_hex(3)}", region)
        client = self.client(created.token)
        if priors is not None:
            client.report(created.id, priors, 0.8, 100, SIGNATURE, "1")
        return created, client

    def raw(
        self, method: str, path: str, token: str | None = ADMIN, **kwargs: Any
    ) -> httpx.Response:
        headers = kwargs.pop("headers", {})
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)

    def sql(self, statement: str, **params: Any) -> list[Any]:
        with self.service.engine.begin() as conn:
            result = conn.execute(text(statement), params)
            return list(result) if result.returns_rows else []

    def snapshot(self) -> dict[str, list[tuple]]:
        """Every row of every table, to show that a refused write changed nothing."""
        return {t: sorted(map(tuple, self.sql(f"SELECT * FROM {t}")), key=repr) for t in TABLES}

    def backdate(self, site_id: object, seconds: float) -> None:
        """Makes a site last seen `seconds` ago, as if it had gone quiet."""
        when = utcnow() - timedelta(seconds=seconds)
        if self.service.engine.dialect.name == "sqlite":
            when = when.replace(tzinfo=None)
        self.sql("UPDATE sites SET last_seen_at = :t WHERE id = :id", t=when, id=str(site_id))
