"""A Cartel site's core fed scripted batches: the helpers the transfer tests share."""

from atoll.platform.transfer.config import CartelConfig
from atoll.platform.transfer.core import AskNeighbours, BatchScored, CartelSite, Effect

SHAPES = {"linear.weight": (4, 3), "linear.bias": (4,)}
CONFIG = CartelConfig(
    report_every=5,
    prior_move_threshold=None,
    accuracy_move_threshold=None,
    drift_window=2,
    accuracy_window=10,
    warmup=0,
)


def site(config: CartelConfig = CONFIG) -> CartelSite:
    return CartelSite("me", config, 4, "logreg:abc", SHAPES)


def batch(t: float, labels: list[int], right: list[bool]) -> BatchScored:
    return BatchScored(t, labels, right)


def steady(core: CartelSite, batches: int, start: int = 0) -> list[Effect]:
    """Classes 0 and 1, nine in ten right."""
    effects: list[Effect] = []
    for i in range(start, start + batches):
        labels = [0, 1] * 5
        effects += core.handle(batch(float(i), labels, [j != 0 for j in range(10)]))
    return effects


def drift(core: CartelSite, start: int) -> list[Effect]:
    """Class 2 appears and is always wrong."""
    effects: list[Effect] = []
    for i in range(start, start + 2):
        labels = [0, 1, 2, 2, 2, 2, 2, 2, 0, 1]
        effects += core.handle(batch(float(i), labels, [lbl != 2 for lbl in labels]))
    return effects


def of(kind: type, effects: list[Effect]) -> list[Effect]:
    return [e for e in effects if isinstance(e, kind)]


def drifted_site() -> CartelSite:
    core = site()
    steady(core, 10)
    effects = drift(core, 10)
    asks = of(AskNeighbours, effects)
    assert len(asks) == 1
    return core
