"""Helpers the tests import (`from support import ...`)."""

import contextlib
import functools
import io
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
REPO_ROOT = Path(__file__).resolve().parent.parent
FASHION_MNIST = Path(os.environ.get("ATOLL_DATA_DIR", "/usr/share/datasets")) / "fashion-mnist"
# Where a developer's (and CI's) PostgreSQL and Redis answer when nothing says otherwise.
LOCAL_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"
NO_POSTGRES = (
    "PostgreSQL: ATOLL_TEST_DATABASE_URL is unset and none answers at 127.0.0.1:5432 "
    "(database test, user postgres)"
)
NO_REDIS = "Redis: ATOLL_TEST_REDIS_URL is unset and none answers at 127.0.0.1:6379"


def require(available: bool, what: str) -> None:
    """Skip, or under CI=true fail loudly, when `what` is not available."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required under CI=true but is missing", pytrace=False)
    pytest.skip(f"missing {what}")


@functools.cache
def postgres_url() -> str | None:
    """ATOLL_TEST_DATABASE_URL; else the local default, if a PostgreSQL answers there."""
    if url := os.environ.get("ATOLL_TEST_DATABASE_URL"):
        return url
    from atoll.localstack.registry import postgres_reachable

    return LOCAL_POSTGRES if _listening(5432) and postgres_reachable(LOCAL_POSTGRES) else None


@functools.cache
def redis_url() -> str | None:
    """ATOLL_TEST_REDIS_URL; else the local default, if a Redis answers there."""
    if url := os.environ.get("ATOLL_TEST_REDIS_URL"):
        return url
    return LOCAL_REDIS if _listening(6379) and _redis_answers(LOCAL_REDIS) else None


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def atoll_in_process(*args: str) -> CliResult:
    """`atoll ARGS` through the console script's own `main`, in this process: the same
    parsing and error reporting without paying a fresh interpreter and torch import (~4 s)
    per call. Tests that need a real process (signals, rank deaths) start one instead."""
    from atoll.cli.main import main

    stdout, stderr = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["atoll", *args]
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    return CliResult(code, stdout.getvalue(), stderr.getvalue())


def start_train(out: Path, *args: str) -> subprocess.Popen[str]:
    """`atoll train --out OUT ARGS` in a process of its own, its output captured as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "atoll.cli", "train", "--out", str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
