"""bench cartel's headline: the ratios the issue's targets are judged on."""

import pytest

from atoll.bench.cartel import headline


def row(policy: str, adapt: float, bytes_: float, accuracy: float) -> dict[str, object]:
    return {"policy": policy, "adapt_batches": adapt, "bytes": bytes_, "final_accuracy": accuracy}


def test_ratios_floor_and_verdicts() -> None:
    rows = [
        row("cartel[sample-weighted]", 3.0, 20_000, 0.91),
        row("random-neighbour", 6.0, 21_000, 0.90),
        row("isolated", 12.0, 0, 0.90),
        row("centralized", 6.0, 30_000_000, 0.92),
    ]
    h = headline(rows, "cartel[sample-weighted]")
    assert h["adapt_speedup_vs_isolated"] == pytest.approx(4.0)
    assert h["max_speedup_vs_isolated_at_floor"] == pytest.approx(4.0)  # 12 over 3
    assert h["bytes_ratio_vs_centralized"] == pytest.approx(1500)
    assert h["accuracy_gap_vs_centralized"] == pytest.approx(0.01)
    assert h["targets_met"] == {
        "speedup_ge_4x": True,
        "bytes_ratio_ge_1000x": True,
        "within_2_points_of_centralized": True,
        "beats_random_neighbour": True,
    }
    rows[0] = row("cartel[sample-weighted]", 6.0, 40_000, 0.89)
    h = headline(rows, "cartel[sample-weighted]")
    assert not any(h["targets_met"].values())
