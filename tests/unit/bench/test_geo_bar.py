"""The geo bench's verdict: the default asp row against issue 17's bar (time to target
against lan's, bytes over the run against bsp's, final accuracy against lan's)."""

import pytest

from atoll.bench.geo import DEFAULT, IID_BAR, SKEWED_BAR, Bar, _score, bar_for, check_bar


def _row(policy: str, time_s: float | None, run_mb: float, accuracy: float) -> dict:
    return {"policy": policy, "time_to_target_s": time_s, "final_accuracy": accuracy,
            "wan_bytes": run_mb * 1e6, "wan_bytes_to_target": None}  # fmt: skip


def _verdict(rows: list[dict], bar: Bar) -> dict:
    _score(rows)
    return check_bar(rows, bar)


@pytest.mark.parametrize(
    ("row", "checks"),
    [
        # 1.9x lan's time, 4% of bsp's bytes, 0.9 point below lan: met
        (_row(DEFAULT.label, 19.0, 400, 0.881), (True, True, True)),
        # 2.1x lan's time, 6% of the bytes, 1.1 points below
        (_row(DEFAULT.label, 21.0, 600, 0.879), (False, False, False)),
        # never reached the target (on some seed): no time, so the time criterion fails
        (_row(DEFAULT.label, None, 100, 0.89), (False, True, True)),
    ],
)
def test_the_skewed_bar_judges_time_bytes_and_accuracy(row: dict, checks: tuple) -> None:
    rows = [_row("lan", 10.0, 10_000, 0.890), _row("bsp", 99.0, 10_000, 0.890), row]
    verdict = _verdict(rows, SKEWED_BAR)
    assert tuple(verdict["asp"][DEFAULT.label].values()) == checks
    assert verdict["default_met"] == all(checks)


def test_the_iid_bar_is_tighter() -> None:
    rows = [
        _row("lan", 10.0, 10_000, 0.890),
        _row("bsp", 99.0, 10_000, 0.890),
        _row(DEFAULT.label, 13.0, 400, 0.886),  # 1.3x lan, 0.4 point below
    ]
    assert tuple(_verdict(rows, IID_BAR)["asp"][DEFAULT.label].values()) == (False, True, True)
    assert bar_for("iid") is IID_BAR and bar_for("dirichlet:0.5") is SKEWED_BAR


def test_only_asp_rows_are_judged_and_a_missing_default_is_not_met() -> None:
    rows = [_row("lan", 10.0, 10_000, 0.89), _row("bsp", 99.0, 10_000, 0.89)]
    rows.append(_row("asp v=1%", 12.0, 100, 0.89))
    verdict = _verdict(rows, SKEWED_BAR)
    assert set(verdict["asp"]) == {"asp v=1%"}
    assert not verdict["default_met"]
