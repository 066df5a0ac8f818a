"""`atoll bench site`, shortened: every setup runs once per repeat, in an order that
rotates, and each row reports the median of its runs, as the printed table does."""

import json
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from atoll.bench import site_overhead

pytestmark = pytest.mark.integration

SETUPS = ["plain loop", "site, 1 worker", "site, 2 workers"]


def test_the_site_bench_reports_the_median_of_rotating_repeats(tmp_path: Path) -> None:
    out = tmp_path / "site_overhead.json"
    console = Console(record=True, width=200)
    site_overhead.run(steps=40, repeats=3, dataset="digits", out=out, console=console)
    printed = console.export_text()
    result = json.loads(out.read_text())
    rows = {row["setup"]: row for row in result["rows"]}
    assert list(rows) == SETUPS
    # Each repeat starts one setup later, so that a drifting machine is not charged to
    # whichever setup always runs last.
    assert "repeat 1/3: plain loop, site, 1 worker, site, 2 workers" in printed
    assert "repeat 2/3: site, 1 worker, site, 2 workers, plain loop" in printed
    assert "repeat 3/3: site, 2 workers, plain loop, site, 1 worker" in printed
    plain = statistics.median(rows["plain loop"]["runs"])
    for name, row in rows.items():
        assert len(row["runs"]) == 3, name
        assert min(row["runs"]) > 0, name
        assert row["samples_per_s"] == statistics.median(row["runs"]), name
        assert row["ratio_to_plain"] == pytest.approx(row["samples_per_s"] / plain), name
        assert f"{row['samples_per_s']:.0f}" in printed, name
    assert result["steps"] == 40
    assert result["repeats"] == 3
