"""The pace of two loops held together, each moment at the slower one's pace."""

import pytest

from atoll.bench.site_overhead import lockstep_pace


def steps(start: float, durations: list[float]) -> list[float]:
    """A loop's start, then the end of each of its steps."""
    ends = [start]
    for d in durations:
        ends.append(ends[-1] + d)
    return ends


@pytest.mark.parametrize(
    ("a", "b", "pace"),
    [
        # the same loop twice: its own pace
        (steps(0, [0.1] * 10), steps(0, [0.1] * 10), 10.0),
        # one loop twice as slow: the pair moves at its pace
        (steps(0, [0.1] * 20), steps(0, [0.2] * 10), 5.0),
        # each core slow for a while, in turn (a: 10 then 5 steps a second, b: 4 then 10):
        # 2 steps in the first 0.5 s, 5 in the next second, though alone a makes 6.7 and
        # b 8 steps a second
        (steps(0, [0.1] * 5 + [0.2] * 5), steps(0, [0.25] * 2 + [0.1] * 10), 7 / 1.5),
        # only the time both ran counts: b starts late and a's fast start is left out
        (steps(0, [0.05] * 4 + [0.1] * 10), steps(0.2, [0.1] * 10), 10.0),
    ],
)
def test_lockstep_pace(a: list[float], b: list[float], pace: float) -> None:
    assert lockstep_pace(a, b) == pytest.approx(pace)


def test_loops_that_never_overlapped_are_refused() -> None:
    with pytest.raises(ValueError, match="never ran at the same time"):
        lockstep_pace(steps(0, [0.1] * 3), steps(5, [0.1] * 3))
