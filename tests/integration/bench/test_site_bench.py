"""`atoll bench site`, shortened: every setup runs, and the table and JSON compare each
with the plain loop measured in the same run."""

import json
from pathlib import Path

import pytest

from atoll.bench import site_overhead

pytestmark = pytest.mark.integration


def test_the_site_bench_measures_every_setup_against_the_plain_loop(tmp_path: Path) -> None:
    out = tmp_path / "site_overhead.json"
    site_overhead.run(steps=40, repeats=1, dataset="digits", out=out)
    result = json.loads(out.read_text())
    rows = {row["setup"]: row for row in result["rows"]}
    assert set(rows) == {"plain loop", "site, 1 worker", "site, 2 workers"}
    assert rows["plain loop"]["ratio_to_plain"] == 1.0
    for row in rows.values():
        assert row["samples_per_s"] > 0 and len(row["runs"]) == 1
        assert row["ratio_to_plain"] == row["samples_per_s"] / rows["plain loop"]["samples_per_s"]
    assert result["target_1_worker_ratio"] == 0.95 and result["steps"] == 40
