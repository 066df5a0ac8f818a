"""Throwaway registries for tests and benchmarks: a fresh database (a SQLite file, or a
PostgreSQL schema of its own so that parallel runs on one database never meet) and the
service running as `atoll registry serve` in a process of its own on a free port."""

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from atoll.platform.net.ports import free_loopback_port
from atoll.registry.migrate import SCHEMA


def is_postgres(url: str) -> bool:
    return make_url(url).get_backend_name() == "postgresql"


def postgres_reachable(url: str) -> bool:
    engine = create_engine(url, connect_args={"connect_timeout": 3})
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except Exception:
        return False
    finally:
        engine.dispose()


@contextmanager
def postgres_schema(base_url: str, purpose: str = "scratch") -> Iterator[str]:
    """A URL whose connections work in a new, empty schema, dropped afterwards."""
    schema = f"atoll_{purpose}_{secrets.token_hex(4)}"
    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(base_url).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


@contextmanager
def scratch_database(
    folder: Path, postgres_url: str | None = None, purpose: str = "scratch"
) -> Iterator[str]:
    """A migrated, empty database: in `postgres_url`'s database if given, else SQLite."""
    if postgres_url is None:
        url = f"sqlite:///{folder / f'{purpose}-{secrets.token_hex(4)}.db'}"
        SCHEMA.upgrade(url)
        yield url
        return
    with postgres_schema(postgres_url, purpose) as url:
        SCHEMA.upgrade(url)
        yield url


class ServerProcess:
    """`atoll registry serve` on a free loopback port; stopped (or killed) on exit.

    Started as `python -m atoll.registry serve` (the same command without the rest of
    the CLI) unless `command` says otherwise, e.g. `["atoll"]`."""

    def __init__(
        self,
        database_url: str,
        admin_token: str,
        log: Path,
        workers: int = 1,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
        migrate: bool = False,
    ) -> None:
        self.command = command or [sys.executable, "-m", "atoll.registry"]
        self.database_url = database_url
        self.admin_token = admin_token
        self.port = free_loopback_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.workers = workers
        self.env = env or {}
        self.migrate = migrate
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> "ServerProcess":
        env = {
            **os.environ,
            **self.env,
            "ATOLL_DATABASE_URL": self.database_url,
            "ATOLL_ADMIN_TOKEN": self.admin_token,
        }
        command = [
            *self.command, "serve", "--port", str(self.port), "--workers", str(self.workers),
            "--no-access-log", "--log-level", "warning", *(["--migrate"] if self.migrate else []),
        ]  # fmt: skip
        with self.log.open("ab") as log:
            # A session of its own: kill() reaches uvicorn's worker processes too.
            self.process = subprocess.Popen(
                command, env=env, stdout=log, stderr=log, start_new_session=True
            )
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the registry exited with {self.process.returncode}: {self.log_text()[-2000:]}"
                )
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the registry was not ready within {timeout_s} s: {self.log_text()}")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush; what the database acknowledged is all that is left."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
