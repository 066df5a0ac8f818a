"""Fixtures shared by every test. A test that needs a service or dataset fails under
CI=true when it is missing, and skips (saying why) on a developer machine."""

from collections import Counter
from pathlib import Path

import pytest
from support import FASHION_MNIST, require


@pytest.fixture(scope="session")
def fashion_mnist() -> Path:
    require(
        (FASHION_MNIST / "train-images-idx3-ubyte.gz").exists(),
        "Fashion-MNIST (apt-get install -y dataset-fashion-mnist)",
    )
    return FASHION_MNIST


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What was skipped, counted by reason: what a newcomer installs or starts to run it."""
    reasons = Counter(_skip_reason(report) for report in terminalreporter.stats.get("skipped", []))
    if not reasons:
        return
    terminalreporter.section(f"{reasons.total()} skipped, by reason")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:5d}  {reason}")


def _skip_reason(report: pytest.TestReport) -> str:
    if isinstance(report.longrepr, tuple):  # (path, line, "Skipped: why")
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr)
