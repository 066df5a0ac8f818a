"""Round-based baselines: BSP, FedAvg and DiLoCo across sites.

Every `period` clocks each site sends its change since the round began to the
owner of each piece of the vector (the vector is split into one piece per site,
as a parameter server sharded across sites would hold it). An owner with every
site's change for its piece applies the outer step and sends the new values to
all; a site waits until it has every piece, so all replicas leave a round equal.

- `bsp` / `lan`: period 1, the outer step adds the mean change. For SGD with
  momentum this is exactly one process training on all sites' batches.
- `fedavg`: period H of local steps, then the mean (McMahan et al., 2017).
- `diloco`: period H inner steps, then Nesterov momentum on the mean
  pseudo-gradient (Douillard et al., 2023; outer lr 0.7, momentum 0.9).
"""

from dataclasses import dataclass
from typing import Any

import torch

from atoll.platform.core.slices import even_slice
from atoll.platform.geo.messages import GeoMessage, Kind, Lane, Outbound, quantize
from atoll.platform.geo.mirror_clock import PROCEED, Decision, Wait
from atoll.platform.geo.policy import GeoPolicy, SiteSlice
from atoll.platform.geo.spec import ValueType


class ProtocolError(ValueError):
    """A message that cannot happen in a correct run of the round protocol."""


@dataclass(frozen=True)
class OuterNesterov:
    lr: float = 0.7
    momentum: float = 0.9


class RoundSync(GeoPolicy):
    def __init__(
        self,
        where: SiteSlice,
        *,
        name: str = "bsp",
        period: int = 1,
        outer: OuterNesterov | None = None,
        change_type: ValueType = "float32",
    ) -> None:
        super().__init__(where)
        if period < 1:
            raise ValueError(f"round period must be >= 1 clock, got {period}")
        self.name = name
        self.period = period
        # How changes travel to their owners; new values always travel as float32, so
        # every replica leaves a round with exactly the owner's values.
        self.change_type = change_type
        self.pieces = [even_slice(len(self.params), self.sites, s) for s in range(self.sites)]
        self.anchor = self.params.clone()  # the replica as the current round began
        self._change = torch.zeros(0)  # this site's contribution to the current round
        self.round = 0
        self.waiting = False
        self.finishing = False
        self._changes: dict[int, dict[int, torch.Tensor]] = {}  # round -> site -> change
        self._results: set[int] = set()  # pieces received this round
        self._outer = None
        if outer is not None:
            start, end = self.pieces[self.site]
            self._outer_param = self.anchor[start:end].clone()
            self._outer = torch.optim.SGD(
                [self._outer_param], lr=outer.lr, momentum=outer.momentum, nesterov=True
            )

    def _decide(self, now: float) -> Decision:
        if self.rejoining:
            return Wait("rejoining: waiting for a mirror's snapshot")
        if self.waiting:
            contributed = self._changes.get(self.round, {})
            missing = {s for s in self.mirrors if s not in self._results}
            if self.site not in self._results:
                missing |= {s for s in self.mirrors if s not in contributed}
            return Wait(
                f"round {self.round}: waiting for changes and pieces", tuple(sorted(missing))
            )
        return PROCEED

    def after_clock(self, delta: torch.Tensor, now: float, lr_ratio: float = 1.0) -> list[Outbound]:
        self.clock += 1
        if self.clock % self.period:
            return []
        return self._contribute()

    def finish(self, now: float) -> list[Outbound]:
        self.finishing = True
        if self.clock % self.period == 0:
            return []  # the last clock closed a round: replicas are already equal
        return self._contribute()

    def done(self, now: float) -> bool:
        return self.finishing and not self.waiting

    def receive(self, message: GeoMessage, now: float) -> list[Outbound]:
        if message.kind == Kind.HELLO:
            snapshot = GeoMessage(
                Kind.SNAPSHOT,
                self.site,
                self.round,
                self.offset,
                len(self.params),
                None,
                self.anchor.clone(),
            )
            return [Outbound(message.origin, snapshot, Lane.BULK)]
        if message.kind == Kind.SNAPSHOT:
            self._adopt(message)
            return []
        piece = self._piece_at(message.offset)
        if message.kind == Kind.CONTRIB:
            self._changes.setdefault(message.clock, {})[message.origin] = message.dense_values()
            return self._close_own_piece()
        if message.kind != Kind.RESULT:
            raise ProtocolError(f"{self.name} does not expect {message.kind.name} messages")
        if self.rejoining:
            return []  # the snapshot, a round's start, will be followed by its results
        if message.clock != self.round:
            raise ProtocolError(f"result for round {message.clock} during round {self.round}")
        self._set_piece(piece, message.dense_values())
        return []

    def contribute(self) -> list[Outbound]:
        """Start a round now: this site's change since the round began, to each owner."""
        return self._contribute()

    def _contribute(self) -> list[Outbound]:
        self._change = self.params - self.anchor
        self.waiting = True
        start, end = self.pieces[self.site]
        self._changes.setdefault(self.round, {})[self.site] = self._change[start:end]
        out = [self._contribution_to(owner) for owner in self.mirrors]
        return out + self._close_own_piece()

    def _contribution_to(self, owner: int) -> Outbound:
        start, end = self.pieces[owner]
        piece, scale = quantize(self._change[start:end], self.change_type)
        message = GeoMessage(
            Kind.CONTRIB, self.site, self.round, self.offset + start, end - start, None, piece,
            scale,
        )  # fmt: skip
        return Outbound(owner, message, Lane.BULK)

    def mirror_restarted(self, mirror: int, now: float) -> list[Outbound]:
        """The restarted owner lost the contributions it held: send this round's again."""
        if self.waiting and mirror not in self._results:
            return [self._contribution_to(mirror)]
        return []

    def _close_own_piece(self) -> list[Outbound]:
        changes = self._changes.get(self.round, {})
        if not self.waiting or len(changes) < self.sites or self.site in self._results:
            return []
        start, end = self.pieces[self.site]
        mean = changes[0].clone()
        for s in range(1, self.sites):  # in site order: every owner sums the same way
            mean += changes[s]
        mean /= self.sites
        if self._outer is None:
            new = self.anchor[start:end] + mean
        else:
            self._outer_param.copy_(self.anchor[start:end])
            self._outer_param.grad = -mean  # the pseudo-gradient: anchor minus the mean replica
            self._outer.step()
            new = self._outer_param.detach().clone()
        del self._changes[self.round]
        result = GeoMessage(
            Kind.RESULT, self.site, self.round, self.offset + start, end - start, None, new
        )
        self._set_piece(self.site, new)  # may close the round
        return [Outbound(m, result, Lane.BULK) for m in self.mirrors]

    def _set_piece(self, piece: int, values: torch.Tensor) -> None:
        start, end = self.pieces[piece]
        self.params[start:end] = values
        self._results.add(piece)
        if len(self._results) == self.sites:
            self.anchor.copy_(self.params)
            self._results.clear()
            self.round += 1
            self.waiting = False

    def _adopt(self, snapshot: GeoMessage) -> None:
        """Start over at a mirror's round: its replica as the round began."""
        if not self.rejoining:
            return
        self.params.copy_(snapshot.dense_values())
        self.anchor.copy_(self.params)
        self.round = snapshot.clock
        self.clock = self.round * self.period
        self.waiting = False
        self._results.clear()
        self.rejoining = False

    def _piece_at(self, offset: int) -> int:
        local = offset - self.offset
        return next(i for i, (start, _) in enumerate(self.pieces) if start == local)

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "rounds": self.round}
