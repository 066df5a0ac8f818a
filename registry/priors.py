"""Class priors as sites report them: a label histogram, checked and normalised, sans I/O."""

import math
from collections.abc import Sequence


class PriorsError(ValueError):
    """Priors that cannot describe a label distribution; `index` names the bad entry, if one."""

    def __init__(self, problem: str, index: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.index = index


def normalise_priors(values: Sequence[float], max_classes: int) -> list[float]:
    """Counts or probabilities in, probabilities summing to 1 out.

    Entries must be finite and non-negative, and at least one positive.
    """
    if not values:
        raise PriorsError("must have at least one class")
    if len(values) > max_classes:
        raise PriorsError(f"has {len(values)} classes; at most {max_classes} are allowed")
    for i, v in enumerate(values):
        if not math.isfinite(v):
            raise PriorsError(f"must be finite, got {v}", i)
        if v < 0:
            raise PriorsError(f"must be non-negative, got {v}", i)
    peak = max(values)
    if peak == 0:
        raise PriorsError("must not be all zero")
    try:
        total = math.fsum(values)
    except OverflowError:  # huge counts (1e308): scale down first so that the sum is finite
        values = [v / peak for v in values]
        total = math.fsum(values)
    return [v / total for v in values]
