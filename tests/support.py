"""Helpers the tests import (`from support import ...`)."""

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
REPO_ROOT = Path(__file__).resolve().parent.parent
FASHION_MNIST = Path(os.environ.get("ATOLL_DATA_DIR", "/usr/share/datasets")) / "fashion-mnist"


def require(available: bool, what: str) -> None:
    """Skip, or under CI=true fail loudly, when `what` is not available."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required under CI=true but is missing", pytrace=False)
    pytest.skip(f"{what} is not available here")


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
