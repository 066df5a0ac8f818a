"""`atoll bench site`, shortened: every setup runs once per repeat, in an order that
rotates; each row reports the median of its runs and their spread, and the ratios
are of those medians, as the printed table and line say. The pair of plain loops runs
side by side: its figure is the sum of two loops, each timed while the other runs."""

import json
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from atoll.bench import site_overhead
from atoll.bench.site_overhead import ONE, PAIR, PLAIN, TWO

pytestmark = pytest.mark.integration


def test_the_site_bench_reports_medians_of_rotating_repeats_and_the_two_ratios(
    tmp_path: Path,
) -> None:
    out = tmp_path / "site.json"
    console = Console(record=True, width=200)
    site_overhead.run(steps=40, repeats=3, dataset="digits", out=out, console=console)
    printed = console.export_text()
    result = json.loads(out.read_text())
    rows = {row["setup"]: row for row in result["rows"]}
    assert list(rows) == [PLAIN, ONE, TWO, PAIR]
    # Each repeat starts one setup later, so that a drifting machine is not charged to
    # whichever setup always runs last.
    assert f"repeat 1/3: {PLAIN}, {ONE}, {TWO}, {PAIR}" in printed
    assert f"repeat 2/3: {ONE}, {TWO}, {PAIR}, {PLAIN}" in printed
    assert f"repeat 3/3: {TWO}, {PAIR}, {PLAIN}, {ONE}" in printed
    for name, row in rows.items():
        assert len(row["runs"]) == 3, name
        assert 0 < row["min"] <= row["samples_per_s"] <= row["max"], name
        assert row["samples_per_s"] == statistics.median(row["runs"]), name
        assert f"{row['samples_per_s']:.0f}" in printed, name
        assert row["compute_ms_per_clock"] > 0, name
    # Where a clock's time goes: only a site has an exchange.
    assert rows[PLAIN]["exchange_ms_per_clock"] is None
    assert rows[PAIR]["exchange_ms_per_clock"] is None
    assert rows[ONE]["exchange_ms_per_clock"] > 0
    assert rows[TWO]["exchange_ms_per_clock"] > 0
    median = {name: row["samples_per_s"] for name, row in rows.items()}
    assert result["ratio_1_worker"] == pytest.approx(median[ONE] / median[PLAIN])
    assert result["scaling_2_workers"] == pytest.approx(median[TWO] / median[ONE])
    assert result["machine_scaling"] == pytest.approx(median[PAIR] / median[PLAIN])
    assert f"ratio_1_worker {result['ratio_1_worker']:.3f}" in printed
    assert f"two independent loops reach {result['machine_scaling']:.2f}" in printed
    # Held to the slower loop's pace at every moment, the pair does no better than free
    # (the slack: the free figure counts each loop's whole run, the held one only the time
    # both ran).
    lockstep = result["machine_lockstep_scaling"]
    assert 0 < lockstep <= result["machine_scaling"] * 1.05
    assert f"{lockstep:.2f} held to the slower one's pace" in printed
    assert (result["steps"], result["repeats"], result["pin_cores"]) == (40, 3, True)
    assert len(result["load_average_before"]) == 3
