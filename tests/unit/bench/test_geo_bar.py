"""The geo bench's verdict on asp against the bar: each criterion, and whether the two
time criteria can hold together given how much slower bsp is than lan."""

from atoll.bench.geo import Bar, _score, check_bar


def _row(policy: str, time_s: float | None, mb: float | None, accuracy: float) -> dict:
    return {"policy": policy, "time_to_target_s": time_s, "final_accuracy": accuracy,
            "wan_bytes_to_target": None if mb is None else mb * 1e6}  # fmt: skip


def _scored(rows: list[dict]) -> list[dict]:
    _score(rows)
    return rows


def test_each_criterion_is_judged_against_lan_and_bsp() -> None:
    rows = _scored(
        [
            _row("lan", 10.0, 4000, 0.890),
            _row("bsp", 150.0, 4000, 0.890),
            _row("asp v=1%", 12.0, 150, 0.881),  # 26.7x fewer bytes, 12.5x sooner, 1.2x lan
            _row("asp v=5%", 14.0, 250, 0.879),  # 16x fewer, 10.7x sooner, 1.4x lan, -1.1 pt
            _row("none", 5.0, 0, 0.5),
        ]
    )
    verdict = check_bar(rows)
    assert verdict["asp"] == {
        "asp v=1%": {"bytes": True, "speedup": True, "time_vs_lan": True, "accuracy": True},
        "asp v=5%": {"bytes": False, "speedup": True, "time_vs_lan": False, "accuracy": False},
    }
    assert verdict["bsp_vs_lan"] == 15.0
    assert verdict["time_criteria_compatible"]


def test_an_asp_that_never_reaches_the_target_misses_the_time_and_byte_criteria() -> None:
    rows = _scored(
        [_row("lan", 10.0, 4000, 0.89), _row("bsp", 99.0, 4000, 0.89), _row("asp", None, None, 0.8)]
    )
    verdict = check_bar(rows, Bar())
    assert verdict["asp"]["asp"] == {
        "bytes": False, "speedup": False, "time_vs_lan": False, "accuracy": False,
    }  # fmt: skip
    assert verdict["bsp_vs_lan"] == 9.9
    assert verdict["time_criteria_compatible"]


def test_time_criteria_that_cannot_hold_together_are_named() -> None:
    rows = _scored([_row("lan", 10.0, 4000, 0.89), _row("bsp", 70.0, 4000, 0.89)])
    verdict = check_bar(rows)
    assert verdict["bsp_vs_lan"] == 7.0
    assert not verdict["time_criteria_compatible"]
    assert verdict["asp"] == {}
