"""Engines and sessions. SQLite gets WAL, foreign keys and write transactions that take
the write lock up front; PostgreSQL needs nothing special."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.orm import Session, sessionmaker

_WRITE = "atoll_write"
_SQLITE_BUSY_TIMEOUT_S = 30


def make_engine(url: str, pool_size: int = 10) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # No pre-ping: it costs a round trip per request. A connection the server
        # dropped fails its one request with 503 (clients retry) and the pool is
        # refilled with fresh connections.
        return create_engine(url, pool_size=pool_size, max_overflow=pool_size)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        connect_args={"timeout": _SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
    )
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # pysqlite's own BEGIN handling is off; `_sqlite_begin` emits the right one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    # FULL: a commit the client saw acknowledged survives a power cut, not only a crash.
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # A deferred transaction that reads and then writes can fail with "database is
    # locked" at once when another writer got in between; IMMEDIATE waits its turn.
    immediate = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    def __init__(self, url: str, pool_size: int = 10) -> None:
        self.url = url
        self.engine = make_engine(url, pool_size)
        self.reader: Engine = self.engine
        if self.engine.dialect.name != "sqlite":
            # Reads need no transaction: each of them is one statement, or statements
            # that do not need one snapshot. Autocommit saves the BEGIN and ROLLBACK
            # round trips. (SQLite's own BEGIN costs nothing, and its pysqlite
            # isolation switching would undo `_sqlite_connect`.)
            self.reader = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        # Same pool; connections taken for writes carry the option `_sqlite_begin` reads.
        self.writer = self.engine.execution_options(**{_WRITE: True})
        self._read = sessionmaker(self.reader, expire_on_commit=False)
        self._write = sessionmaker(self.writer, expire_on_commit=False)

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def reading(self) -> Iterator[Session]:
        with self._read() as session:
            yield session

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A session whose work is committed by the caller; anything else rolls back."""
        with self._write() as session:
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A Core connection in a write transaction, committed when the block ends without an
        error: the hot paths skip the ORM's unit of work, which costs more than the SQL."""
        with self.writer.begin() as conn:
            yield conn

    def dispose(self) -> None:
        self.engine.dispose()


def describe_url(url: str) -> str:
    """The URL without its password, fit for messages and logs."""
    return make_url(url).render_as_string(hide_password=True)
