"""`atoll bench geo --quick`, as CI runs it: every policy in the simulator, scored against
lan and bsp, with its table, JSON and plot."""

import json
from pathlib import Path

import pytest

from atoll.bench import geo

pytestmark = pytest.mark.integration


def test_the_quick_geo_bench_scores_every_policy_against_lan_and_bsp(tmp_path: Path) -> None:
    geo.run(quick=True, out=tmp_path, jobs=2, seeds=2)
    result = json.loads((tmp_path / "geo-quick.json").read_text())
    assert result["quick"]
    assert result["dataset"] == "digits"
    assert result["seeds"] == 2
    (rows,) = result["scenarios"].values()
    by_policy = {r["policy"]: r for r in rows}
    assert set(by_policy) == {p.label for p in geo.QUICK.policies}
    # Every row is the mean of its two seeds' runs, each kept in the JSON.
    (runs,) = result["runs"].values()
    assert sorted((r["policy"], r["seed"]) for r in runs) == sorted(
        (p.label, seed) for p in geo.QUICK.policies for seed in (0, 1)
    )
    lan_runs = [r for r in runs if r["policy"] == "lan"]
    assert lan_runs[0]["timeline"] != lan_runs[1]["timeline"]
    assert by_policy["lan"]["seeds_reached"] == 2
    assert by_policy["lan"]["time_to_target_s"] == pytest.approx(
        sum(r["time_to_target_s"] for r in lan_runs) / 2
    )
    lan, bsp, none = by_policy["lan"], by_policy["bsp"], by_policy["none"]
    # The same math on links 100x apart: same replicas and bytes, far apart in time.
    assert lan["final_accuracy"] == pytest.approx(bsp["final_accuracy"], abs=1e-6)
    assert lan["wan_bytes"] == bsp["wan_bytes"] > 0
    assert bsp["time_to_target_s"] > 10 * lan["time_to_target_s"]
    assert bsp["speedup_over_bsp"] == 1.0
    assert lan["time_vs_lan"] == 1.0
    assert none["wan_bytes"] == 0
    assert none["stall_s"] == 0
    for row in rows:
        if row["policy"].startswith("asp"):
            assert 0 < row["wan_bytes"] < bsp["wan_bytes"], row["policy"]
    # The verdict against the bar names every asp row and each of its three criteria.
    verdict = result["bar"]["three-continents, dirichlet:0.5"]
    asp_rows = {r["policy"] for r in rows if r["policy"].startswith("asp")}
    assert set(verdict["asp"]) == asp_rows
    assert all(set(c) == {"time_vs_lan", "bytes", "accuracy"} for c in verdict["asp"].values())
    assert verdict["default_policy"] == geo.DEFAULT.label in asp_rows
    assert verdict["default_met"] == all(verdict["asp"][geo.DEFAULT.label].values())
    plot = tmp_path / "geo-quick-three-continents-dirichlet0.5.png"
    assert plot.stat().st_size > 10_000
