"""Direct asp: every site sends the top of its residual steps to every site, one WAN hop.

The sharded exchange (`sharded.py`) sends each step through the owner of its piece: two
WAN hops, up to ~230 ms on gaia-11, four to five 50 ms clocks before a step reaches
every replica. Here each site broadcasts its own compressed step, so a step crosses one
hop. Gaia's release does that too, but each replica there applies its site's whole step
at once and the others' only as their significant parts arrive, so on label-skewed
sites every replica leans toward its own classes. Here, as in the sharded exchange:

- A site does not apply its own step. It adds it (scaled 1/N) to its residual,
  broadcasts the residual's top-k (the links' share), and keeps what did not go (error
  feedback: what was sent, rounded as it travels, leaves the residual).
- Every replica, this site's too, applies exactly the messages sent: its own when it
  sends them, a mirror's when it arrives. Once every message has arrived, every replica
  holds the same sum; until then replicas differ by messages in flight.

Bytes: a broadcast costs N - 1 times a message to one owner, so at the same bytes as the
sharded exchange the share per clock is about 2/(N - 1) of it (about 1% against 5% on
11 sites; the default, 0.8%, sends 4.0% of bsp's bytes on Fashion-MNIST). The
lookahead and the mirror clock are the sharded exchange's: the gradient is taken ahead
by the mirrors' clocks not yet applied times this site's last step as a mean step.

At the end each site tells the mirrors it is done (an empty FLUSH, behind its last
update on the link), and once every site has, one round across the sites (`RoundSync`)
ends the run. By default (`final="average"`) the round makes every replica the
replicas' mean, which once every message has arrived is what the messages made each of
them, and drops the residuals: adding them (`final="flush"`: each owner sums its piece
of the residuals and sends every site the new values; a broadcast of the residuals
would cost N - 1 dense messages a site, the round about two) ended 0.9 points lower on
Fashion-MNIST over gaia-11 (seeds 0-2, skewed and IID; docs/geo-skew.md). The
round's new values are absolute, so replicas end equal even where a restart lost
messages in flight.
"""

import torch

from atoll.platform.geo.messages import (
    BROADCAST,
    GeoMessage,
    Kind,
    Lane,
    Outbound,
    largest,
    take_sent,
)
from atoll.platform.geo.residual import ResidualSync
from atoll.platform.geo.spec import ValueType


class DirectSync(ResidualSync):
    def _exchange(self, delta: torch.Tensor, now: float, lr_ratio: float) -> list[Outbound]:
        chosen = largest(self.residual, self._take_step(delta))
        return [self._send(chosen)]

    def receive(self, message: GeoMessage, now: float) -> list[Outbound]:
        if message.kind not in (Kind.UPDATE, Kind.FLUSH):
            return super().receive(message, now)  # rejoining, and the closing round
        return self._receive_applied(message, now)

    def finish(self, now: float) -> list[Outbound]:
        """Tell the mirrors this site is done; the closing round starts once all are."""
        self.finishing = True
        done = Outbound(BROADCAST, self._message(Kind.FLUSH), Lane.BULK)
        return [done, *self._start_average()]

    @property
    def _ends_with_round(self) -> bool:
        return True  # the residuals' sum ("flush") or the replicas' mean ("average")

    @property
    def _closing_change_type(self) -> ValueType:
        # Residuals are steps, sent as steps are; the mean of replicas stays exact.
        return self.value_type if self.final == "flush" else "float32"

    def _start_average(self) -> list[Outbound]:
        """Once this site and every mirror are done, and every update has arrived (each
        FLUSH follows its site's updates on the link): the closing round."""
        if not self.finishing or not all(m in self.flushed for m in self.mirrors):
            return []
        if self.final == "average":
            return super()._start_average()
        average = self._averaging()
        if average.waiting or average.round > 0:
            return []
        # The round adds the mean of the sites' changes to the owner's replica: a site's
        # change is its residual as a mean step, so the replicas gain the residuals' sum.
        average.anchor.copy_(self.params)
        self.params.add_(self.residual, alpha=self.sites)
        self.sent_elements += int((self.residual != 0).sum())
        self.residual.zero_()
        return average.contribute()

    def _send(self, chosen: torch.Tensor) -> Outbound:
        """The chosen elements of the residual, to every mirror and to this replica. Even
        none go: the message tells the mirrors this site's clock."""
        values, scale = take_sent(self.residual, chosen, self.value_type)
        message = self._carrying(Kind.UPDATE, chosen, values, scale)
        self.sent_elements += len(chosen)
        self._apply(message)
        return Outbound(BROADCAST, message, Lane.BULK)
