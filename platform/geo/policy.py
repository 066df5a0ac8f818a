"""The interface every geo policy implements, and the no-communication baseline.

A policy owns one site's view of a slice of the model vector (its `params`, a
view the site trains in place). The driver calls, in this order per clock:

    before_clock(now)          -> Proceed, or Wait (call again after messages arrive)
    lookahead(now)             -> None, or an offset from params to take the gradient at
    ... the site computes a gradient and its optimizer steps (scaled by update_scale) ...
    after_clock(delta, now)    -> messages to send; delta is what the local step changed
    receive(message, now)      -> for each arrived message, at clock boundaries

and at the end `finish(now)`, then `receive` until `done()`. No I/O, no clocks:
time comes in as `now`, messages go out as return values.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import torch

from atoll.platform.geo.messages import BROADCAST, GeoMessage, Kind, Lane, Outbound, carrying
from atoll.platform.geo.mirror_clock import PROCEED, Decision, Wait


@dataclass(frozen=True, eq=False)
class SiteSlice:
    """Where a policy runs: site `site` of `sites`, owning `params`, the slice of the model
    vector that starts at `offset`. Every policy takes one; a policy that runs another
    inside it (asp's closing round) hands it on."""

    site: int
    sites: int
    params: torch.Tensor
    offset: int = 0


class GeoPolicy(ABC):
    name: str = "policy"

    def __init__(self, where: SiteSlice) -> None:
        if not 0 <= where.site < where.sites:
            raise ValueError(f"site {where.site} is not one of {where.sites}")
        self.where = where
        self.site = where.site
        self.sites = where.sites
        self.params = where.params
        self.offset = where.offset
        self.clock = 0  # clocks completed
        self.stall_s = 0.0
        self.rejoining = False
        self._waiting_since: float | None = None

    @property
    def update_scale(self) -> float:
        """Factor on the local optimizer's step (ASP divides it among the sites)."""
        return 1.0

    @property
    def mirrors(self) -> list[int]:
        return [s for s in range(self.sites) if s != self.site]

    def before_clock(self, now: float) -> Decision:
        """May the site start its next clock? Time spent told to wait counts as stall."""
        decision = self._decide(now)
        if isinstance(decision, Wait):
            if self._waiting_since is None:
                self._waiting_since = now
        elif self._waiting_since is not None:
            self.stall_s += now - self._waiting_since
            self._waiting_since = None
        return decision

    def _decide(self, now: float) -> Decision:
        return PROCEED

    def lookahead(self, now: float) -> torch.Tensor | None:
        """Where, relative to params, the next gradient should be taken; None: at params.

        Runtimes ask once per clock, once `before_clock` has let it start: a policy may
        count what it predicts.
        """
        return None

    @abstractmethod
    def after_clock(self, delta: torch.Tensor, now: float, lr_ratio: float = 1.0) -> list[Outbound]:
        """The local step (already applied to params) changed them by `delta`."""

    @abstractmethod
    def receive(self, message: GeoMessage, now: float) -> list[Outbound]: ...

    def finish(self, now: float) -> list[Outbound]:
        """Training is over here: what must still go out so that replicas converge."""
        return []

    def done(self, now: float) -> bool:
        """Nothing more is owed to or expected from the mirrors."""
        return True

    # Inputs from the runtime about the network; policies that care override them.
    def link_backlog(self, mirror: int, seconds: float) -> None:
        """How long `mirror`'s link needs to carry what is already queued on it."""
        return None

    def wan_usage(self, bits_per_s: float) -> None:
        """Measured egress over the recent past."""
        return None

    def mirror_restarted(self, mirror: int, now: float) -> list[Outbound]:
        """`mirror` came back with no memory of this job's traffic."""
        return []

    def rejoin(self) -> list[Outbound]:
        """This site restarted: ask the mirrors for the replica before training on.

        A mirror answers a HELLO with a SNAPSHOT; policies that keep replicas in
        sync wait for it (`rejoining`) and adopt the first one.
        """
        self.rejoining = True
        hello = self._message(Kind.HELLO)
        return [Outbound(BROADCAST, hello, Lane.CONTROL)]

    def _message(
        self,
        kind: Kind,
        indices: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
    ) -> GeoMessage:
        """A message from this site about its slice, as of its clock."""
        return GeoMessage(
            kind, self.site, self.clock, self.offset, len(self.params), indices, values
        )

    def _carrying(
        self, kind: Kind, indices: torch.Tensor, values: torch.Tensor, scale: float | None = None
    ) -> GeoMessage:
        """This site's (index, value) pairs, sparse or dense, whichever is smaller."""
        return carrying(
            kind, self.site, self.clock, self.offset, len(self.params), indices, values, scale
        )

    def stats(self) -> dict[str, Any]:
        return {"policy": self.name, "clock": self.clock, "stall_s": self.stall_s}


class Isolated(GeoPolicy):
    """`none`: every site trains on its own data only; nothing crosses the WAN."""

    name = "none"

    def after_clock(self, delta: torch.Tensor, now: float, lr_ratio: float = 1.0) -> list[Outbound]:
        self.clock += 1
        return []

    def rejoin(self) -> list[Outbound]:
        return []  # nothing to catch up with: the site goes on from its own checkpoint

    def receive(self, message: GeoMessage, now: float) -> list[Outbound]:
        return []
