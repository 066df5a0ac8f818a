"""Tracking asp: every replica moves by every site's (estimated) step every clock.

Gaia holds back each site's small updates and releases them in bursts once they
matter; on label-skewed sites a replica then moves mostly by its own site's steps
between bursts and leans toward its own classes. Here (error-feedback tracking, as
EF21 / EF21-SGDM, Richtarik et al. 2021, Fatkhullin et al. 2023) each site keeps, for
every site, an estimate of that site's per-clock step, shared by all sites: a sender
transmits only a compressed change of its own estimate (its largest differences from
its actual step), and every site adds the sum of all the estimates to its replica
every clock. With momentum a site's step changes slowly, so a few elements per clock
keep the estimates close.

A change made at clock s counts from clock s on at every site: one that arrives after
the receiver's clock t is applied with the clocks it missed (t - s + 1 times), so once
every message has arrived all replicas have added the same steps. The share of
elements sent adapts to the links' measured backlog (`LinkBudget`). The lookahead, if
any, takes the gradient ahead by the estimated global velocity (the sum of estimates).
"""

from typing import Any

import torch

from atoll.platform.geo.asp import ApproximateSync
from atoll.platform.geo.link_budget import LinkBudget
from atoll.platform.geo.messages import (
    BROADCAST,
    GeoMessage,
    Kind,
    Lane,
    Outbound,
    as_sent,
    take_sent,
)
from atoll.platform.geo.policy import SiteSlice


class TrackingSync(ApproximateSync):
    def __init__(
        self, where: SiteSlice, *, budget: LinkBudget, decay: float = 0.9, **asp: Any
    ) -> None:
        super().__init__(where, budget=budget, **asp)
        if not 0 <= decay <= 1:
            raise ValueError(f"velocity decay must be in [0, 1], got {decay}")
        self.budget: LinkBudget = budget
        self.decay = decay
        sites, size = self.sites, len(self.params)
        self.estimates = torch.zeros(sites, size)  # row s: site s's step per clock
        self.velocity = torch.zeros(size)  # their sum: the replica's step per clock
        # The clock each element of each site's position was last corrected at.
        self.corrected_at = torch.zeros(sites, size, dtype=torch.int64)
        # What this site's own steps moved it that the shared estimates have not (yet).
        self.error = torch.zeros(size)
        self.estimated: set[int] = set()  # mirrors whose whole estimate a rejoiner has
        self.caught_up_clocks = 0  # clocks of others' changes applied late, in total
        self.updates_received = 0

    def lookahead(self, now: float) -> torch.Tensor | None:
        if not self.lookahead_gain or self.clock == 0:
            return None
        self.lookaheads += 1
        return self.velocity * self.lookahead_gain

    def _exchange(self, delta: torch.Tensor, now: float, lr_ratio: float) -> list[Outbound]:
        """Move the replica by the estimates; send the largest errors of this site's own."""
        self.clock += 1
        self.mirror_clock.clock = self.clock
        own = self.estimates[self.site]
        # The shared trajectory moved this site by its estimate, not by its step.
        self.error += delta - own
        self.params += self.velocity - delta
        # An estimate not refreshed fades, as a momentum step does: a stale velocity
        # carried on for many clocks would overshoot.
        self.estimates *= self.decay
        self.velocity *= self.decay
        if self.mirrors and self.clock > 1:  # the first clock sends the floor's share
            self.budget.observe(max(self.backlog_s[m] for m in self.mirrors))
        k = self.budget.elements(len(self.error))
        indices = self.error.abs().topk(k, sorted=False).indices.sort().values
        values, scale = take_sent(self.error, indices, self.value_type)
        self._correct(self.site, self.clock, indices, as_sent(values, scale))
        self.sent_elements += k
        update = self._carrying(Kind.UPDATE, indices, values, scale)
        return [Outbound(BROADCAST, update, Lane.BULK)]

    def _correct(
        self, site: int, clock: int, indices: torch.Tensor, correction: torch.Tensor
    ) -> None:
        """`site`'s position error at `clock`: add it, and learn its velocity from it.

        The error built up over the clocks since the element was last corrected, at the
        rate the estimate was off by: that rate is added to the estimate. Every site
        computes the same from the same message.
        """
        since = (clock - self.corrected_at[site, indices]).clamp(min=1)
        change = correction / since
        self.corrected_at[site, indices] = clock
        # Clocks this site ran (late > 0) or will run (< 0) with the old estimate that the
        # sender ran with the new one: the change has faded that much since, and the
        # replica missed what it would have added meanwhile.
        late = self.clock - clock
        rho = self.decay
        faded = change * rho**late if late else change
        missed = late if rho == 1 else (1 - rho**late) / (1 - rho)
        self.estimates[site].index_add_(0, indices, faded)
        self.velocity.index_add_(0, indices, faded)
        self.params.index_add_(0, indices, correction + change * missed)
        self.caught_up_clocks += max(late, 0)

    def receive(self, message: GeoMessage, now: float) -> list[Outbound]:
        origin, kind = message.origin, message.kind
        if kind == Kind.HELLO:
            # The site restarted with no estimates: it gets this site's whole one, and
            # its own starts again from zero here as there.
            self._forget(origin)
            out = super().receive(message, now)
            whole = self._message(Kind.ESTIMATE, None, self.estimates[self.site].clone())
            return [*out, Outbound(origin, whole, Lane.BULK)]
        if kind == Kind.ESTIMATE:
            self.mirror_clock.tick(origin, message.clock, now)
            self._forget(origin)
            change = message.dense_values()
            self.estimates[origin] += change
            self.velocity += change
            self.corrected_at[origin] = message.clock
            self.estimated.add(origin)
            return []
        if kind != Kind.UPDATE:
            return super().receive(message, now)
        self.mirror_clock.heard(origin, now)
        if self.rejoining and origin not in self.estimated:
            return []  # the mirror's ESTIMATE, on its way, includes this change
        indices = message.indices if message.indices is not None else torch.arange(message.length)
        self._correct(origin, message.clock, indices, message.float_values())
        self.applied_elements += len(message.values) if message.values is not None else 0
        self.updates_received += 1
        self.mirror_clock.tick(origin, message.clock, now)
        return []

    def _forget(self, site: int) -> None:
        """`site` starts again from no estimate (it restarted)."""
        self.velocity -= self.estimates[site]
        self.estimates[site].zero_()
        self.corrected_at[site] = self.clock

    def _adopt(self, snapshot: GeoMessage) -> None:
        if self.rejoining:
            self._forget(self.site)
            self.error.zero_()
        super()._adopt(snapshot)

    def stats(self) -> dict[str, Any]:
        return {
            **super().stats(),
            "mean_catch_up_clocks": self.caught_up_clocks / max(self.updates_received, 1),
        }
