"""Sharded asp: compressed, pipelined BSP across sites, without its barrier (issue 17).

Gaia's release broadcasts each site's update to every mirror, and each replica applies
its own site's step at once and the others' late. On label-skewed sites that pulls
every replica toward its own classes, and a broadcast to N - 1 mirrors costs about
N - 1 times what BSP's sharded exchange costs per element. Here, as in BSP across
sites (`rounds.py`), the slice is split into one piece per site and site j owns piece j:

- A site does not apply its own step. It adds it (scaled 1/N) to its residual, sends
  each owner the part of the residual's top-k (the links' share of the elements) that
  lies in the owner's piece, and keeps what did not go (error feedback: exactly what
  was sent, rounding to the wire type included, leaves the residual).
- An owner adds the contributions that arrive (from whichever clock) to its aggregate,
  and every clock broadcasts the aggregate's top-k' for its piece and applies it to its
  own replica; every site applies each owner's broadcast when it arrives.

So every replica applies the same sequence of aggregate steps (sums of the sites'
1/N-scaled steps) to each piece, in the owner's order, and replicas differ only by
broadcasts in flight: no site leans toward its own classes. A site waits (mirror
clock) when it is more than DS clocks ahead of the last round it applied from some
owner. An owner closes a round, and broadcasts, as soon as every live site has
contributed that clock, not at its own next clock: with momentum every clock of delay
costs stability (measured: at DS=4 on LAN links, 2 sites, the rounds' delay alone took
digits from 0.90 to 0.23).

The lookahead (`residual.py`) counts an owner's rounds not applied yet.

Contributions and broadcasts are both UPDATE messages (FLUSH at the end): one to a
site about its own piece is a contribution, one about the sender's piece a broadcast.
At the end each site flushes its residual to the owners, and each owner, once every
site has flushed to it, broadcasts what its aggregate still holds: then every replica
holds every step sent. `final="average"` also runs asp's averaging round after that,
which makes replicas equal even where a restart lost messages; a site's restart (its
HELLO reaches every site) turns it on for the job.
"""

from typing import Any

import torch

from atoll.platform.core.slices import even_slice
from atoll.platform.geo.messages import (
    BROADCAST,
    GeoMessage,
    Kind,
    Lane,
    Outbound,
    carrying,
    largest,
    take_sent,
)
from atoll.platform.geo.residual import ResidualSync


class ShardedSync(ResidualSync):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        params, sites, site = self.params, self.sites, self.site
        if len(params) < sites:
            raise ValueError(f"a slice of {len(params)} elements has no piece for each of {sites}")
        self.pieces = [even_slice(len(params), sites, s) for s in range(sites)]
        start, end = self.pieces[site]
        self.aggregate = torch.zeros(end - start)  # contributions to this site's piece, unsent
        self.final_contributions: set[int] = set()  # mirrors that flushed to this owner
        # The last clock whose contribution each site (this one too) sent this owner, and
        # the last round this owner closed: a round closes, and its aggregate goes out,
        # once every live site has contributed that clock.
        self.contributed = dict.fromkeys(range(sites), 0)
        self.closed = 0
        self.broadcast_final = False
        self.broadcast_elements = 0

    def _exchange(self, delta: torch.Tensor, now: float, lr_ratio: float) -> list[Outbound]:
        # The replica moves only by the owners' aggregates: the local step goes to them.
        chosen = largest(self.residual, self._take_step(delta))
        out = self._contribute(chosen, Kind.UPDATE)
        self.contributed[self.site] = self.clock
        return out + self._close_rounds(now)

    def rejoin(self) -> list[Outbound]:
        self.final = "average"  # see `receive`: every site learns of the restart
        return super().rejoin()

    def receive(self, message: GeoMessage, now: float) -> list[Outbound]:
        origin, kind = message.origin, message.kind
        if kind == Kind.HELLO:
            # A restarted site's snapshot misses broadcasts that were in flight to it, so
            # its replica may end apart: every site (each gets the HELLO) ends averaging.
            self.final = "average"
        if kind not in (Kind.UPDATE, Kind.FLUSH):
            return super().receive(message, now)  # rejoining, and the final average
        self.mirror_clock.heard(origin, now)
        if self._is_contribution(message):
            # Owed to every replica whatever this site's state: it is no longer anywhere else.
            message.add_to(self.aggregate)
            if kind == Kind.FLUSH:
                self.final_contributions.add(origin)
                return self._broadcast_final(now)
            self.contributed[origin] = max(self.contributed[origin], message.clock)
            return self._close_rounds(now)
        return self._receive_applied(message, now)

    def finish(self, now: float) -> list[Outbound]:
        """Flush the residual to the owners; own piece: broadcast once all have flushed."""
        self.finishing = True
        out = self._contribute(self.residual.nonzero().squeeze(1), Kind.FLUSH)
        return out + self._broadcast_final(now)

    def done(self, now: float) -> bool:
        return self.broadcast_final and super().done(now)

    def _contribute(self, chosen: torch.Tensor, kind: Kind) -> list[Outbound]:
        """Send each owner the chosen elements of the residual in its piece, even none:
        it tells the owner this site's clock (FLUSH: that it was the last)."""
        out = []
        bounds = torch.tensor([start for start, _ in self.pieces] + [len(self.residual)])
        cuts = torch.searchsorted(chosen, bounds).tolist()
        for owner, (start, end) in enumerate(self.pieces):
            indices = chosen[cuts[owner] : cuts[owner + 1]]
            if owner == self.site:  # no wire, no rounding
                self.aggregate.index_add_(0, indices - start, self.residual[indices])
                self.residual[indices] = 0
                continue
            values, scale = take_sent(self.residual, indices, self.value_type)
            message = carrying(
                kind, self.site, self.clock, self.offset + start, end - start,
                indices - start, values, scale,
            )  # fmt: skip
            self.sent_elements += len(indices)
            out.append(Outbound(owner, message, Lane.BULK))
        return out

    def _close_rounds(self, now: float) -> list[Outbound]:
        """Broadcast the aggregate's top once every live site has contributed a new clock.

        Waiting for the owner's own next clock instead would add a clock to every step's
        way to the replicas; with momentum, each clock of delay costs stability.
        """
        live = [self.site, *self.mirror_clock.live(now)]
        ready = min(self.contributed[s] for s in live)
        if ready <= self.closed or self.broadcast_final:
            return []
        rounds, self.closed = ready - self.closed, ready
        k = min(len(self.aggregate), rounds * self.budget.elements(len(self.aggregate)))
        return self._broadcast(largest(self.aggregate, k), Kind.UPDATE, ready)

    def _broadcast(self, chosen: torch.Tensor, kind: Kind, round_: int) -> list[Outbound]:
        """The chosen elements of this owner's aggregate, to every site and its own replica,
        as of `round_` (every site contributed up to it). On the bulk lane it never
        overtakes an earlier broadcast: a site that knows an owner's round has applied
        every broadcast up to it."""
        start, end = self.pieces[self.site]
        values, scale = take_sent(self.aggregate, chosen, self.value_type)
        message = carrying(
            kind, self.site, round_, self.offset + start, end - start, chosen, values, scale
        )
        self.broadcast_elements += len(chosen)
        self._apply(message)
        return [Outbound(BROADCAST, message, Lane.BULK)]

    def _broadcast_final(self, now: float) -> list[Outbound]:
        """Once this site finished and every mirror flushed to it: the rest, to all."""
        if not self.finishing or self.broadcast_final:
            return []
        if not all(m in self.final_contributions for m in self.mirror_clock.live(now)):
            return []
        self.broadcast_final = True
        rest = self.aggregate.nonzero().squeeze(1)
        out = self._broadcast(rest, Kind.FLUSH, max(self.clock, self.closed))
        return out + self._start_average()

    def _start_average(self) -> list[Outbound]:
        if not self.broadcast_final:
            return []  # this site's own piece is not final yet
        return super()._start_average()

    def _is_contribution(self, message: GeoMessage) -> bool:
        """About this site's piece (from another site): a contribution; else a broadcast."""
        return message.offset - self.offset == self.pieces[self.site][0]

    def _adopt(self, snapshot: GeoMessage) -> None:
        if self.rejoining:
            # The replica holds every round up to the snapshot's clock.
            self.closed = self.contributed[self.site] = snapshot.clock
        super()._adopt(snapshot)

    def stats(self) -> dict[str, Any]:
        return {
            **super().stats(),
            "broadcast_elements": self.broadcast_elements,
            "pending_aggregate_l1": float(self.aggregate.abs().sum()),
        }
