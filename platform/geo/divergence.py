"""Notices when training has diverged, so no run goes on silently from a broken model.

A run has diverged when its loss is not a finite number, or when the loss, smoothed
over a few clocks, has grown past `factor` times the smallest smoothed loss seen and
above chance (the loss of a uniform guess, ln of the number of classes): a trained
model's loss may grow several times from a very low value (a noisy batch, a replica
adopted on rejoining), but a diverged one ends up worse than guessing. Pure: the runtime feeds
it each clock's loss and acts on the verdict (stops the run, says why).
"""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Diverged:
    clock: int
    loss: float
    reason: str


@dataclass
class DivergenceGuard:
    chance: float = math.log(10)  # ln(classes): the loss of a uniform guess
    factor: float = 3.0
    warmup: int = 10  # clocks before the smoothed loss counts as a baseline
    smoothing: float = 0.2  # weight of the newest loss in the smoothed one
    smoothed: float | None = None
    best: float = math.inf
    clocks: int = 0

    @classmethod
    def for_classes(cls, classes: int) -> "DivergenceGuard":
        return cls(chance=math.log(max(classes, 2)))

    def __post_init__(self) -> None:
        if not self.factor > 1:
            raise ValueError(f"blow-up factor must be > 1, got {self.factor}")

    def observe(self, clock: int, loss: float) -> Diverged | None:
        """The loss of `clock`; a verdict when the run has diverged, else None."""
        if not math.isfinite(loss):
            return Diverged(clock, loss, f"loss is {loss} at clock {clock}")
        self.clocks += 1
        a = self.smoothing
        self.smoothed = loss if self.smoothed is None else a * loss + (1 - a) * self.smoothed
        if self.clocks < self.warmup:
            return None
        self.best = min(self.best, self.smoothed)
        if self.smoothed > self.factor * self.best and self.smoothed > self.chance:
            return Diverged(
                clock,
                loss,
                f"loss blew up at clock {clock}: smoothed {self.smoothed:.3g}, "
                f"{self.smoothed / self.best:.1f}x its lowest ({self.best:.3g}) and above "
                f"chance ({self.chance:.3g})",
            )
        return None
