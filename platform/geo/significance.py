"""Gaia's significance filter: send only the accumulated updates that matter.

Each local step is applied to the replica at once and added to an accumulator.
Element i is significant when |acc_i / w_i| > v_t (always when w_i is 0 and
acc_i is not); significant elements are sent and their accumulator cleared, the
rest keep accumulating. The threshold v_t follows a schedule, and in adaptive
mode a controller moves it to keep measured WAN use within a budget.
"""

import math
from dataclasses import dataclass

import torch

from atoll.platform.geo.spec import ScheduleKind


@dataclass(frozen=True)
class ThresholdSchedule:
    """v_t: constant, v0/sqrt(t) for t >= 1, or v0 scaled as the learning rate decays."""

    v0: float = 0.01
    kind: ScheduleKind = "constant"

    def __post_init__(self) -> None:
        if not self.v0 >= 0:
            raise ValueError(f"threshold must be >= 0, got {self.v0}")

    def at(self, clock: int, lr_ratio: float = 1.0) -> float:
        """Threshold at `clock`; `lr_ratio` is lr_t / lr_0 for the `lr` schedule."""
        if self.kind == "inverse-sqrt":
            return self.v0 / math.sqrt(max(clock, 1))
        if self.kind == "lr":
            return self.v0 * lr_ratio
        return self.v0


@dataclass
class AdaptiveThreshold:
    """Raises the threshold by `step` when WAN use exceeds 1.1x the budget, lowers it
    below 0.9x, within [v_min, v_max]. Scales the schedule's value multiplicatively."""

    budget_bps: float
    step: float = 1.25
    v_min: float = 1e-4
    v_max: float = 1.0
    scale: float = 1.0

    def observe(self, used_bps: float) -> None:
        if used_bps > 1.1 * self.budget_bps:
            self.scale *= self.step
        elif used_bps < 0.9 * self.budget_bps:
            self.scale /= self.step

    def apply(self, v: float) -> float:
        bounded = min(max(v * self.scale, self.v_min), self.v_max)
        self.scale = bounded / v if v > 0 else self.scale  # no wind-up past the bounds
        return bounded


@dataclass(frozen=True)
class Selection:
    indices: torch.Tensor  # int64, increasing
    values: torch.Tensor  # float32, what the accumulator held there

    def __len__(self) -> int:
        return len(self.indices)


class SignificanceFilter:
    def __init__(
        self,
        size: int,
        schedule: ThresholdSchedule,
        adaptive: AdaptiveThreshold | None = None,
    ) -> None:
        self.accumulator = torch.zeros(size)
        self.schedule = schedule
        self.adaptive = adaptive
        self.threshold = schedule.v0

    def accumulate(self, delta: torch.Tensor) -> None:
        self.accumulator += delta

    def select(
        self, params: torch.Tensor, clock: int, lr_ratio: float = 1.0, limit: int | None = None
    ) -> Selection:
        """The significant elements at `clock`, given the replica's current values; with a
        `limit`, only that many of them, the most significant."""
        v = self.schedule.at(clock, lr_ratio)
        if self.adaptive is not None:
            v = self.adaptive.apply(v)
        self.threshold = v
        acc = self.accumulator
        significant = acc.abs() > v * params.abs()
        significant &= acc != 0  # w == 0 counts only when there is something to send
        indices = significant.nonzero().squeeze(1)
        if limit is not None and len(indices) > limit:
            ratio = acc[indices].abs() / params[indices].abs()  # inf where w == 0: first
            indices = indices[ratio.topk(limit, sorted=False).indices].sort().values
        return Selection(indices, acc[indices].clone())

    def sent(self, selection: Selection, as_sent: torch.Tensor) -> None:
        """Remove what went out; `as_sent` is the values after encoding (e.g. float16),
        so rounding error stays in the accumulator and reaches the mirrors later."""
        self.accumulator.index_add_(0, selection.indices, -as_sent.float())

    def drain(self) -> Selection:
        """Everything left, for the final flush; the accumulator is cleared."""
        indices = self.accumulator.nonzero().squeeze(1)
        selection = Selection(indices, self.accumulator[indices].clone())
        self.accumulator.zero_()
        return selection
