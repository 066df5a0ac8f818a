"""What a site reports, and Cartel's choice of logical neighbours among reports.

Neighbours share the model signature, are live, are good on the classes that
drifted, and are ranked by Jensen-Shannon divergence of class priors (bits), or
drawn at random for the random-neighbour baseline. Pure functions, no I/O.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import jensenshannon


@dataclass(frozen=True)
class SiteReport:
    """A site's metadata, a few hundred bytes: what the registry keeps per site."""

    site: str
    time_s: float
    class_priors: tuple[float, ...]
    accuracy: float
    class_accuracy: tuple[float | None, ...]  # None: too few samples of the class lately
    class_samples: tuple[int, ...]
    samples: int
    signature: str
    version: int
    drift: bool
    endpoint: str | None = None


def divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence in bits (0 same, 1 disjoint); scipy gives its square root."""
    width = max(len(p), len(q))
    a = np.zeros(width)
    b = np.zeros(width)
    a[: len(p)] = p
    b[: len(q)] = q
    if a.sum() <= 0 or b.sum() <= 0:
        return 1.0
    return float(jensenshannon(a, b, base=2) ** 2)


def good_on(report: SiteReport, classes: Sequence[int], min_accuracy: float) -> bool:
    """The site knows every class (reported an accuracy on it) and its mean accuracy
    over them is at least `min_accuracy`. The mean, not each one: a class that is hard
    everywhere (Fashion-MNIST's shirt) would otherwise rule out every neighbour."""
    known = []
    for c in classes:
        accuracy = report.class_accuracy[c] if c < len(report.class_accuracy) else None
        if accuracy is None:
            return False
        known.append(accuracy)
    return bool(known) and sum(known) / len(known) >= min_accuracy


def choose_neighbours(
    reports: Sequence[SiteReport],
    *,
    asking: str,
    priors: Sequence[float],
    signature: str,
    drifted: Sequence[int],
    now_s: float,
    live_window_s: float,
    min_accuracy: float,
    k: int,
    rng: np.random.Generator | None = None,
) -> list[SiteReport]:
    """The k sites to try, best first. With `rng`: k random live sites with the
    signature, accuracy unchecked (the random-neighbour baseline)."""
    live = [
        r
        for r in reports
        if r.site != asking and r.signature == signature and now_s - r.time_s <= live_window_s
    ]
    if rng is not None:
        order = rng.permutation(len(live))
        return [live[i] for i in order[:k]]
    good = [r for r in live if good_on(r, drifted, min_accuracy)]
    good.sort(key=lambda r: (round(divergence(priors, r.class_priors), 12), r.site))
    return good[:k]
