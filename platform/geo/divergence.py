"""Notices when training has diverged, so no run goes on silently from a broken model.

A run has diverged when its loss is not a finite number, or when the loss, smoothed
over a few clocks, has grown past `factor` times the smallest smoothed loss seen and
above where it started (the smoothed loss at the end of a warm-up): a trained model's
loss may triple from a very low value on a noisy batch, but a diverged one ends up
worse than untrained. Pure: the runtime feeds
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
    factor: float = 3.0
    warmup: int = 10  # clocks before the smoothed loss counts as a baseline
    smoothing: float = 0.2  # weight of the newest loss in the smoothed one
    smoothed: float | None = None
    best: float = math.inf
    start: float = math.inf  # the smoothed loss after the warm-up
    clocks: int = 0

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
        if self.clocks == self.warmup:
            self.start = self.smoothed
        self.best = min(self.best, self.smoothed)
        if self.smoothed > self.factor * self.best and self.smoothed > self.start:
            return Diverged(
                clock,
                loss,
                f"loss blew up at clock {clock}: smoothed {self.smoothed:.3g}, "
                f"{self.smoothed / self.best:.1f}x its lowest ({self.best:.3g})",
            )
        return None
