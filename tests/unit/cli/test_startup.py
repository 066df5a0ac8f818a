"""The command line starts without torch: every command that does not train loads only
what it runs. Timing is left to the report: a shared machine makes it noise here."""

import subprocess
import sys

import pytest
from support import REPO_ROOT

# Runs `atoll ARGS` through the console script's `main`, then says which heavy modules
# the process had loaded by the end.
PROBE = """
import sys
sys.argv = ["atoll", *sys.argv[1:]]
from atoll.cli.main import main
try:
    main()
except SystemExit:
    pass
print("loaded:", " ".join(m for m in ("torch", "numpy", "sqlalchemy") if m in sys.modules))
"""


def loaded_after(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("loaded:"), result.stdout
    return set(last.removeprefix("loaded:").split())


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["train", "--help"],
        ["sim", "--help"],
        ["control", "--help"],
        ["control", "submit", "--help"],
        ["registry", "--help"],
        ["sites", "--help"],
        ["edge", "--help"],
        ["data", "--help"],
        ["bench", "--help"],
    ],
)
def test_help_loads_no_torch(args: list[str]) -> None:
    assert "torch" not in loaded_after(*args)


def test_the_help_loads_neither_numpy_nor_sqlalchemy() -> None:
    assert loaded_after("--help") == set()


def test_a_command_that_talks_to_a_service_loads_no_torch() -> None:
    # Nothing answers on port 9: the command fails after reading its job file and
    # building its request, which is all of its own code that runs before the network.
    loaded = loaded_after(
        "control", "submit", "--job", str(REPO_ROOT / "examples/jobs/asp-three-continents.yaml"),
        "--url", "http://127.0.0.1:9", "--token", "t",
    )  # fmt: skip
    assert "torch" not in loaded
