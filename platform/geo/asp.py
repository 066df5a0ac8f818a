"""Gaia's Approximate Synchronous Parallel between sites (Hsieh et al., NSDI 2017).

Each site applies its own steps at once and sends its mirrors only significant
accumulated updates (significance filter), never runs more than DS clocks ahead
of its slowest live mirror (mirror clock), announces updates stuck behind a
congested link so mirrors hold back reads of them (selective barrier), and at
the end flushes what is left so every replica converges to the same model.

Each site's step is scaled by 1/N: when every update reaches every mirror, the
replicas then move by the mean of the sites' steps, exactly as BSP's averaged
step does for SGD with momentum (which is linear in the gradients).

With a lookahead, a site takes its gradient ahead of its replica, towards where
the mirrors' undelivered steps will move it. Those steps are predicted from the
site's own last one (each mirror is missing that many clocks of it): with
momentum a step changes slowly, and the site's own is the freshest it knows,
whereas a mirror's last step arrives already stale and predicting from it
feeds the delay back.
"""

from typing import Any, Literal

import torch

from atoll.platform.geo.link_budget import LinkBudget
from atoll.platform.geo.messages import BROADCAST, GeoMessage, Kind, Lane, Outbound, quantize
from atoll.platform.geo.mirror_clock import Decision, MirrorClock, Wait
from atoll.platform.geo.policy import GeoPolicy, SiteSlice
from atoll.platform.geo.rounds import ProtocolError, RoundSync
from atoll.platform.geo.selective_barrier import SelectiveBarrier
from atoll.platform.geo.significance import AdaptiveThreshold, SignificanceFilter, ThresholdSchedule
from atoll.platform.geo.skew import label_skew, staleness_for
from atoll.platform.geo.spec import ValueType


class ApproximateSync(GeoPolicy):
    name = "asp"

    def __init__(
        self,
        where: SiteSlice,
        *,
        schedule: ThresholdSchedule | None = None,
        adaptive: AdaptiveThreshold | None = None,
        staleness: int = 1,
        lease_s: float = 30.0,
        start_s: float = 0.0,
        value_type: ValueType = "float16",
        congestion_s: float = 0.05,
        final: Literal["average", "flush"] = "average",
        lookahead: float = 0.0,
        budget: LinkBudget | None = None,
        class_counts: torch.Tensor | None = None,
        sync_at_skew: float | None = None,
        sync_density: float | None = None,
    ) -> None:
        """`class_counts`: this site's samples per class (None: unknown). With `sync_at_skew`, the
        sites send each other theirs with their first clock and, once each has every live
        site's, all run synchronously (DS=0) if their label skew (`skew.py`) is at least
        that. Nobody waits for the counts: below the limit nothing changes. Synchronous,
        the share sent may grow to `sync_density`: a clock waits out the slowest link's
        latency anyway, and what the links carry within it costs no time."""
        super().__init__(where)
        self.budget = budget  # caps what goes out per clock by the links' measured backlog
        self.filter = SignificanceFilter(
            len(self.params), schedule or ThresholdSchedule(), adaptive
        )
        self.mirror_clock = MirrorClock(self.site, self.sites, staleness, lease_s, start_s)
        self.barrier = SelectiveBarrier()
        self.value_type = value_type
        self.congestion_s = congestion_s
        self.backlog_s = dict.fromkeys(self.mirrors, 0.0)
        self.final = final
        self.flushed: set[int] = set()  # mirrors that finished: nothing more comes from them
        self.finishing = False
        self._average: RoundSync | None = None
        self.sent_elements = 0
        self.applied_elements = 0
        self.lookahead_gain = lookahead
        self._last_step: torch.Tensor | None = None
        self.lookaheads = 0  # clocks whose gradient was taken ahead of the replica
        self._undelivered = 0  # mirror clocks predicted, over those clocks
        self.class_counts = class_counts
        self.sync_at_skew = sync_at_skew
        self.sync_density = sync_density
        self.mirror_counts: dict[int, torch.Tensor | None] = {}  # mirrors' class counts
        self.label_skew: float | None = None  # once measured (None: a site's is unknown)
        self._skew_settled = sync_at_skew is None
        self._counts_sent = sync_at_skew is None

    @property
    def update_scale(self) -> float:
        return 1.0 / self.sites

    def _decide(self, now: float) -> Decision:
        if self.rejoining:
            return Wait("rejoining: waiting for a mirror's snapshot")
        if self.barrier.blocked():
            return Wait(
                "selective barrier: significant updates in flight", self.barrier.blocking_sites()
            )
        if not self._skew_settled and all(
            m in self.mirror_counts for m in self.mirror_clock.live(now)
        ):
            self._settle_skew(now)
        return self.mirror_clock.may_start_next(now)

    def _settle_skew(self, now: float) -> None:
        """Every live site's class counts are in: measure the skew, and bound DS by it."""
        self._skew_settled = True
        counts = [self.class_counts, *(self.mirror_counts[m] for m in self.mirror_clock.live(now))]
        known = [c for c in counts if c is not None]
        if len(known) < len(counts):
            return  # a site that does not know its counts: DS stays as set
        self.label_skew = label_skew(known)
        clocks = self.mirror_clock
        clocks.staleness = staleness_for(self.label_skew, clocks.staleness, self.sync_at_skew)
        if clocks.staleness == 0 and self.budget is not None and self.sync_density is not None:
            self.budget.ceiling = max(self.budget.ceiling, self.sync_density)

    def _counts_message(self) -> GeoMessage:
        counts = None if self.class_counts is None else self.class_counts.float()
        length = 0 if counts is None else len(counts)
        return GeoMessage(
            Kind.CLASS_COUNTS, self.site, self.clock, self.offset, length, None, counts
        )

    def _counts_out(self) -> list[Outbound]:
        """This site's class counts, once, with its first clock's messages."""
        if self._counts_sent:
            return []
        self._counts_sent = True
        return [Outbound(BROADCAST, self._counts_message(), Lane.CONTROL)]

    def lookahead(self, now: float) -> torch.Tensor | None:
        if not self.lookahead_gain or self._last_step is None:
            return None
        clocks = self.mirror_clock
        undelivered = sum(max(0, self.clock - clocks.known[m]) for m in clocks.live(now))
        if not undelivered:
            return None
        self.lookaheads += 1
        self._undelivered += undelivered
        return self._last_step * (self.lookahead_gain * undelivered)

    def after_clock(self, delta: torch.Tensor, now: float, lr_ratio: float = 1.0) -> list[Outbound]:
        return [*self._exchange(delta, now, lr_ratio), *self._counts_out()]

    def _exchange(self, delta: torch.Tensor, now: float, lr_ratio: float) -> list[Outbound]:
        """Count the clock and share its step: what each exchange does differently."""
        self.clock += 1
        self.mirror_clock.clock = self.clock
        self.filter.accumulate(delta)
        if self.lookahead_gain:
            self._last_step = delta.clone()
        limit = None
        if self.budget is not None:
            if self.clock > 1:  # the first clock sends the floor's share
                self.budget.observe(max((self.backlog_s[m] for m in self.mirrors), default=0.0))
            limit = self.budget.elements(len(self.params))
        selection = self.filter.select(self.params, self.clock, lr_ratio, limit)
        if not len(selection):
            return [Outbound(BROADCAST, self._message(Kind.CLOCK), Lane.CONTROL)]
        values, scale = quantize(selection.values, self.value_type)
        update = self._carrying(Kind.UPDATE, selection.indices, values, scale)
        # What the mirrors will add, rounding included: the rest stays in the accumulator.
        self.filter.sent(selection, values.float() * scale if scale is not None else values)
        self.sent_elements += len(selection)
        out = []
        congested = [m for m in self.mirrors if self.backlog_s[m] > self.congestion_s]
        if congested:
            notice = self._message(Kind.INDICES, update.indices)
            out += [Outbound(m, notice, Lane.CONTROL) for m in congested]
        out.append(Outbound(BROADCAST, update, Lane.BULK))
        return out

    def receive(self, message: GeoMessage, now: float) -> list[Outbound]:
        origin, kind = message.origin, message.kind
        self.mirror_clock.heard(origin, now)
        if kind in (Kind.HELLO, Kind.CLASS_COUNTS):
            return self._receive_introduction(message)
        if kind == Kind.SNAPSHOT:
            self._adopt(message)
            self.mirror_clock.tick(origin, message.clock, now)
            return []
        if self.rejoining:
            return []  # the snapshot will include what this carried
        if kind in (Kind.CONTRIB, Kind.RESULT):
            return self._averaging().receive(message, now)
        if kind in (Kind.UPDATE, Kind.FLUSH):
            message.add_to(self.params)
            self.applied_elements += len(message.values) if message.values is not None else 0
            self.barrier.arrived(origin, message.clock)
            if kind == Kind.FLUSH:
                self.flushed.add(origin)
                self.mirror_clock.tick(origin, message.clock, now)
                return self._start_average()
        elif kind == Kind.INDICES:
            # Dense updates announce no list: every element of the slice is on its way.
            everything = torch.arange(message.length)
            announced = message.indices if message.indices is not None else everything
            self.barrier.announce(origin, message.clock, announced)
        self.mirror_clock.tick(origin, message.clock, now)
        return []

    def _receive_introduction(self, message: GeoMessage) -> list[Outbound]:
        """A site introducing itself: its class counts as it starts, or its HELLO as it
        restarts (it gets this replica, and these counts to measure the skew again)."""
        origin = message.origin
        if message.kind == Kind.CLASS_COUNTS:
            counts = None if message.values is None else message.float_values()
            # Refused counts are dropped: without them no skew is measured, and DS stays.
            if counts is not None and bool((counts < 0).any()):
                raise ProtocolError(f"site {origin} sent negative class counts")
            mine = self.class_counts
            if counts is not None and mine is not None and len(counts) != len(mine):
                raise ProtocolError(f"site {origin} counts {len(counts)} classes, not {len(mine)}")
            self.mirror_counts[origin] = counts
            return []
        out = [Outbound(origin, self._snapshot(), Lane.BULK)]
        if self.sync_at_skew is not None:
            out.append(Outbound(origin, self._counts_message(), Lane.CONTROL))
        return out

    def finish(self, now: float) -> list[Outbound]:
        """Tell the mirrors nothing more will come, then make every replica equal.

        "flush" (Gaia) sends what the accumulator still holds. "average" (the default)
        replaces every replica by the mean of all once every site has finished: the
        held-back remainders are many clocks stale, and adding them all at once at the
        end costs accuracy that the mean of the replicas keeps.
        """
        self.finishing = True
        rest = self.filter.drain()
        if self.final == "flush":
            flush = self._carrying(Kind.FLUSH, rest.indices, rest.values)
        else:
            flush = self._message(Kind.FLUSH)  # the marker only
        return [Outbound(BROADCAST, flush, Lane.BULK), *self._start_average()]

    def done(self, now: float) -> bool:
        """Finished here, every live mirror finished, and (for "average") the mean is in."""
        if not self.finishing:
            return False
        live = self.mirror_clock.live(now)
        if not all(m in self.flushed for m in live):
            return False
        if not self._ends_with_round or len(live) < len(self.mirrors):
            return True  # a lost mirror can no longer take part in a round
        average = self._average
        return average is not None and average.round > 0

    def _averaging(self) -> RoundSync:
        """The one-round average at the end; mirrors may start it before this site does."""
        if self._average is None:
            self._average = RoundSync(
                self.where, name="final", change_type=self._closing_change_type
            )
            self._average.anchor.zero_()  # each site's "change" is then its whole replica
        return self._average

    @property
    def _ends_with_round(self) -> bool:
        """Does the job end with a round across the sites (here: the mean of replicas)?"""
        return self.final == "average"

    @property
    def _closing_change_type(self) -> ValueType:
        """How the closing round's changes travel: whole replicas here, kept exact."""
        return "float32"

    def _start_average(self) -> list[Outbound]:
        """Contribute to the mean once this site and every mirror have finished."""
        if self.final != "average" or not self.finishing:
            return []
        if not all(m in self.flushed for m in self.mirrors):
            return []
        average = self._averaging()
        if average.waiting or average.round > 0:
            return []
        return average.contribute()

    def rejoin(self) -> list[Outbound]:
        out = super().rejoin()
        if self.sync_at_skew is None:
            return out
        self._counts_sent = True
        return [*out, Outbound(BROADCAST, self._counts_message(), Lane.CONTROL)]

    def link_backlog(self, mirror: int, seconds: float) -> None:
        self.backlog_s[mirror] = seconds

    def wan_usage(self, bits_per_s: float) -> None:
        if self.filter.adaptive is not None:
            self.filter.adaptive.observe(bits_per_s)

    def mirror_restarted(self, mirror: int, now: float) -> list[Outbound]:
        self.barrier.forget(mirror)
        self.mirror_clock.heard(mirror, now)
        return []

    def stats(self) -> dict[str, Any]:
        return {
            **super().stats(),
            "threshold": self.filter.threshold,
            "link_share": self.budget.share if self.budget else None,
            "congested_clocks": self.budget.congested_clocks if self.budget else 0,
            "sent_elements": self.sent_elements,
            "applied_elements": self.applied_elements,
            "pending_accumulator_l1": float(self.filter.accumulator.abs().sum()),
            "lookaheads": self.lookaheads,
            "mean_undelivered_mirror_clocks": self._undelivered / max(self.lookaheads, 1),
            "label_skew": self.label_skew,
            "staleness": self.mirror_clock.staleness,
        }

    def _snapshot(self) -> GeoMessage:
        return self._message(Kind.SNAPSHOT, None, self.params.clone())

    def _adopt(self, snapshot: GeoMessage) -> None:
        if not self.rejoining:
            return  # a second snapshot after the first was adopted
        self.params.copy_(snapshot.dense_values())
        self.filter.accumulator.zero_()
        self.clock = self.mirror_clock.clock = snapshot.clock
        self.rejoining = False
