"""The geo bench over several seeds: a policy's row is the mean of its runs, and it has
a time to target only if every seed reached the target."""

import pytest

from atoll.bench.geo import SKEWED_BAR, _score, check_bar, mean_over_seeds


def _run(policy: str, seed: int, time_s: float | None, mb: float, accuracy: float) -> dict:
    reached = time_s is not None
    return {
        "policy": policy, "seed": seed, "final_accuracy": accuracy,
        "min_site_accuracy": accuracy - 0.01, "time_to_target_s": time_s,
        "clocks_to_target": 100 if reached else None, "wan_bytes": 2 * mb * 1e6,
        "wan_bytes_to_target": mb * 1e6 if reached else None, "stall_s": 1.0,
        "virtual_time_s": 20.0, "clocks": 200, "wall_s": 60.0,
    }  # fmt: skip


def test_a_row_is_the_mean_of_its_seeds() -> None:
    row = mean_over_seeds([_run("lan", 0, 6.0, 4000, 0.89), _run("lan", 1, 4.0, 3000, 0.87)])
    assert row["policy"] == "lan"
    assert row["seeds"] == 2
    assert row["seeds_reached"] == 2
    assert row["time_to_target_s"] == 5.0
    assert row["wan_bytes_to_target"] == 3500000000.0
    assert row["final_accuracy"] == pytest.approx(0.88)
    assert row["final_accuracy_range"] == pytest.approx(0.02)
    assert row["wan_bytes"] == 7000000000.0
    assert row["wall_s"] == 120.0


def test_one_seed_short_of_the_target_leaves_the_row_without_a_time_and_misses_the_bar() -> None:
    runs = {
        "lan": [_run("lan", 0, 6.0, 4000, 0.89), _run("lan", 1, 4.0, 4000, 0.89)],
        "bsp": [_run("bsp", 0, 60.0, 4000, 0.89), _run("bsp", 1, 40.0, 4000, 0.89)],
        # the first seed alone would meet every criterion
        "asp": [_run("asp", 0, 5.0, 100, 0.89), _run("asp", 1, None, 150, 0.88)],
    }
    rows = [mean_over_seeds(r) for r in runs.values()]
    _score(rows)
    asp = rows[2]
    assert asp["seeds_reached"] == 1
    assert asp["time_to_target_s"] is None
    assert asp["wan_bytes_to_target"] is None
    assert asp["speedup_over_bsp"] is None
    verdict = check_bar(rows, SKEWED_BAR)
    assert verdict["asp"]["asp"] == {"time_vs_lan": False, "bytes": True, "accuracy": True}
