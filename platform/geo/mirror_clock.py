"""Gaia's mirror clock: SSP across sites.

A clock is one site iteration. Sites tell each other how many clocks they have
completed; a site may not run more than DS clocks ahead of its slowest live
mirror. A mirror is live while its lease (renewed by anything heard from it)
has not expired: a site that goes silent stops holding the others back, and
counts again as soon as it is heard from. Time is an input.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Proceed:
    pass


@dataclass(frozen=True)
class Wait:
    reason: str
    on: tuple[int, ...] = ()  # the sites being waited for


Decision = Proceed | Wait
PROCEED = Proceed()


@dataclass
class MirrorClock:
    site: int
    sites: int
    staleness: int = 1  # DS
    lease_s: float = 30.0
    start_s: float = 0.0  # leases run from here: a site that never shows up is let go
    clock: int = 0  # clocks this site has completed
    known: dict[int, int] = field(default_factory=dict)  # mirror -> clocks it has completed
    heard_at: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.staleness < 0:
            raise ValueError(f"DS must be >= 0, got {self.staleness}")
        for mirror in self.mirrors:
            self.known.setdefault(mirror, 0)
            self.heard_at.setdefault(mirror, self.start_s)

    @property
    def mirrors(self) -> list[int]:
        return [s for s in range(self.sites) if s != self.site]

    def heard(self, mirror: int, now: float) -> None:
        """Anything from a mirror renews its lease."""
        self.heard_at[mirror] = now

    def tick(self, mirror: int, clock: int, now: float) -> None:
        """`mirror` has completed `clock` clocks."""
        self.known[mirror] = max(self.known[mirror], clock)
        self.heard(mirror, now)

    def live(self, now: float) -> list[int]:
        """Mirrors heard from within the lease."""
        return [m for m in self.mirrors if now - self.heard_at[m] <= self.lease_s]

    def may_start_next(self, now: float) -> Decision:
        """May this site start clock `self.clock + 1`?"""
        behind = [m for m in self.live(now) if self.clock - self.known[m] > self.staleness]
        if behind:
            return Wait(f"more than {self.staleness} clock(s) ahead of a mirror", tuple(behind))
        return PROCEED

    def slowest_live(self, now: float) -> int:
        return min((self.known[m] for m in self.live(now)), default=self.clock)
