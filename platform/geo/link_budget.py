"""How much of its update a site sends per clock, from what its links measurably carry.

A site broadcasts one update to every mirror, so its slowest link sets the pace. After
each clock the runtime reports each link's send backlog (the time the link needs to
carry what is already queued on it). The share of elements sent grows while every
backlog stays under a clock's worth of sending (`target_s`) and halves when one goes
over: additive-increase, multiplicative-decrease on a measured quantity, as TCP does,
so a thin link is never flooded and a wide one is used up to `ceiling`. It starts at
`floor`: no burst before the links have been measured.
"""

from dataclasses import dataclass


@dataclass
class LinkBudget:
    ceiling: float  # largest share of elements per clock (caps bytes on wide links)
    floor: float  # the share at the start and the least it goes down to
    target_s: float = 0.05  # backlog beyond which the slowest link is congested
    growth: float = 1.25
    share: float = 0.0
    congested_clocks: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.floor <= self.ceiling <= 1:
            raise ValueError(f"need 0 < floor <= ceiling <= 1, got {self.floor}, {self.ceiling}")
        if not self.target_s > 0:
            raise ValueError(f"target backlog must be > 0 s, got {self.target_s}")
        self.share = self.share or self.floor

    def observe(self, backlog_s: float) -> float:
        """The slowest link's backlog after a clock; returns the share for the next one."""
        if backlog_s > self.target_s:
            self.congested_clocks += 1
            self.share = max(self.floor, self.share / 2)
        elif backlog_s < self.target_s / 2:
            self.share = min(self.ceiling, self.share * self.growth)
        return self.share

    def elements(self, size: int) -> int:
        """How many of `size` elements the share allows (at least one)."""
        return max(1, min(size, round(self.share * size)))
