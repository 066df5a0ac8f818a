"""What the sharded and direct exchanges share: a replica that moves only by what is sent.

A site does not apply its own step. It adds it (scaled 1/N) to its residual and sends
the top of the residual (error feedback: what was sent, rounded as it travels, leaves
the residual); every replica, this site's too, moves only by messages that every
replica applies, so none leans toward its own site's classes.

The lookahead takes the gradient ahead of the replica by what the mirrors still owe it
(their clocks, or their rounds as owners, not applied here yet, on average) times this
site's last step as a mean step (its 1/N-scaled step times N): the freshest step a site
knows is its own. The replica's recent velocity, an average of stale messages, was
measured as a predictor too and failed (digits, LAN links, DS=4: 0.09-0.36 against
0.91-0.93).
"""

from typing import Any

import torch

from atoll.platform.geo.asp import ApproximateSync
from atoll.platform.geo.link_budget import LinkBudget
from atoll.platform.geo.messages import GeoMessage, Kind, Outbound
from atoll.platform.geo.policy import SiteSlice


class ResidualSync(ApproximateSync):
    def __init__(self, where: SiteSlice, *, budget: LinkBudget, **asp: Any) -> None:
        """ApproximateSync's arguments; a budget is required: it sets the share sent."""
        super().__init__(where, budget=budget, **asp)
        self.budget: LinkBudget = budget
        # This site's steps not yet sent: the filter's accumulator.
        self.residual = self.filter.accumulator
        self._own_step = torch.zeros(len(self.params))  # its last step, as N sites' mean
        # The replica as the messages made it: restoring it undoes a local step exactly
        # (subtracting the step again would leave a rounding error per clock).
        self._replica = self.params.clone()

    def lookahead(self, now: float) -> torch.Tensor | None:
        if not self.lookahead_gain or self.clock == 0:
            return None
        clocks = self.mirror_clock
        live = clocks.live(now)
        # The mirror clock keeps a live mirror within DS; one further behind has just come
        # back (or this site has): it will not keep the pace the prediction assumes, and
        # extrapolating the site's step over all it owes blew a replica up.
        owed = sum(min(max(0, self.clock - clocks.known[m]), clocks.staleness) for m in live) / max(
            len(live), 1
        )
        if not owed:
            return None
        self.lookaheads += 1
        self._undelivered += round(owed)
        return self._own_step * (self.lookahead_gain * owed)

    def _take_step(self, delta: torch.Tensor) -> int:
        """Count the clock, move the local step from the replica into the residual, and
        return how many elements the links allow this clock."""
        self.clock += 1
        self.mirror_clock.clock = self.clock
        self.params.copy_(self._replica)
        torch.mul(delta, self.sites, out=self._own_step)
        self.residual += delta
        if self.mirrors and self.clock > 1:  # the first clock sends the floor's share
            self.budget.observe(max(self.backlog_s[m] for m in self.mirrors))
        return self.budget.elements(len(self.residual))

    def _receive_applied(self, message: GeoMessage, now: float) -> list[Outbound]:
        """A message every replica applies (an UPDATE or a FLUSH about a slice)."""
        if not self.rejoining:  # else the snapshot holds what this carried
            self._apply(message)
        self.mirror_clock.tick(message.origin, message.clock, now)
        if message.kind == Kind.FLUSH:
            self.flushed.add(message.origin)
            return self._start_average()
        return []

    def _apply(self, message: GeoMessage) -> None:
        """Add a message to the replica; the sender applies its own exactly so."""
        start = message.offset - self.offset
        for target in (self._replica, self.params):
            message.add_to(target[start : start + message.length])
        self.applied_elements += len(message.values) if message.values is not None else 0

    def _adopt(self, snapshot: GeoMessage) -> None:
        if self.rejoining:
            self._own_step.zero_()
            self._replica.copy_(snapshot.dense_values())
        super()._adopt(snapshot)
