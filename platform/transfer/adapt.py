"""Time to adapt: how long after a drift a site's accuracy is back where it was."""

from collections.abc import Sequence
from dataclasses import dataclass

PRE_WINDOW = 10  # batches before the onset that set the pre-drift level
SMOOTH = 3  # batches in the rolling accuracy
TOLERANCE = 0.02  # "back" means within 2 points of the pre-drift level


@dataclass(frozen=True)
class Adaptation:
    onset: int
    pre_level: float
    batches: int  # from the onset to the first rolling window back at the level
    adapted: bool  # False: not back by the end; `batches` then runs to the end


def time_to_adapt(accuracy: Sequence[float], onset: int, end: int | None = None) -> Adaptation:
    """Only rolling windows that lie wholly after the onset count: a window holding
    pre-drift batches would call a site adapted before it had seen the change."""
    end = len(accuracy) if end is None else min(end, len(accuracy))
    before = accuracy[max(0, onset - PRE_WINDOW) : onset]
    if not before:
        raise ValueError(f"no accuracy before the onset at batch {onset}")
    level = sum(before) / len(before)
    for last in range(onset + SMOOTH - 1, end):
        window = accuracy[last - SMOOTH + 1 : last + 1]
        if sum(window) / SMOOTH >= level - TOLERANCE:
            return Adaptation(onset, level, last - onset + 1, True)
    return Adaptation(onset, level, end - onset, False)
