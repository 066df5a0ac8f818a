"""How every `atoll` command (and `python -m atoll.registry|edge`) ends on bad input: one
line that names the problem, exit code 2, no traceback."""

import sys

import typer
from pydantic import ValidationError

from atoll.platform.core.errors import AtollError


def problems(error: ValidationError) -> str:
    """Each field that is wrong and why, on one line."""
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or '(the whole spec)'}: {e['msg']}"
        for e in error.errors()
    )


def run(command: typer.Typer, prog_name: str) -> None:
    try:
        command(prog_name=prog_name)
    except AtollError as e:
        _fail(str(e))
    except ValidationError as e:
        _fail(problems(e))


def _fail(message: str) -> None:
    print(f"atoll: error: {message}", file=sys.stderr)
    sys.exit(2)
