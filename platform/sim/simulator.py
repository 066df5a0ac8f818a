"""The discrete-event simulation of a geo job.

Each site alternates computing a clock (real gradients, virtual duration from the
compute profile) with the geo policy's decisions; messages cross simulated links.
Messages that arrive while a site computes are applied at its next clock
boundary, as the real runtime applies them. Every `eval_every` clocks a site first
evaluates its replica and only then computes, for the profile's `eval_s`, as a real
site does: a pause that shifts every later send and arrival (docs/geo-skew.md).
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import SimDiverged, SimEvent, SimSiteDone, TimelinePoint
from atoll.platform.core.host_memory import keep_freed_memory
from atoll.platform.data.datasets import load_dataset, share_indices
from atoll.platform.geo.codec import encoded_size
from atoll.platform.geo.divergence import Diverged, DivergenceGuard
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.messages import BROADCAST, GeoMessage, Outbound
from atoll.platform.geo.mirror_clock import Wait
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.policy import GeoPolicy
from atoll.platform.geo.timeline import AccuracyTimeline, Point
from atoll.platform.model.evaluate import evaluate
from atoll.platform.sim.compute import ComputeProfile, compute_profile
from atoll.platform.sim.events import EventQueue
from atoll.platform.sim.network import SimulatedLink
from atoll.platform.sim.replica import SiteReplica


class State(Enum):
    IDLE = auto()
    COMPUTING = auto()
    WAITING = auto()
    FINISHING = auto()
    DONE = auto()


@dataclass
class SimSite:
    index: int
    name: str
    replica: SiteReplica
    policy: GeoPolicy
    step_s: float
    eval_s: float = 0.0  # the pause of a periodic evaluation
    state: State = State.IDLE
    inbox: list[GeoMessage] = field(default_factory=list)
    delta: torch.Tensor | None = None
    loss: float = 0.0
    bytes_at_last_clock: int = 0
    time_at_last_clock: float = 0.0
    final_accuracy: float | None = None
    guard: DivergenceGuard = field(default_factory=DivergenceGuard)


class GeoSimulation:
    def __init__(
        self,
        job: GeoJob,
        compute: str | ComputeProfile = "measured",
        on_event: Callable[[SimEvent], None] = lambda event: None,
    ) -> None:
        keep_freed_memory()  # every replica trains and evaluates in this process
        self.job = job
        self.on_event = on_event
        data = load_dataset(job.dataset, job.data_dir)
        self.topology, link_topology = job.topologies()
        names = self.topology.sites
        labels = data.train.y.numpy()
        batch = job.workers * job.batch_size
        self.test = data.test
        self.eval_subset = data.test.sample(job.eval_samples, job.seed)
        if isinstance(compute, str):
            compute = compute_profile(
                compute, job.model, data.train, job.batch_size, self.eval_subset
            )
        self.compute = compute
        self.events = EventQueue()
        self.sites: list[SimSite] = []
        for i, name in enumerate(names):
            replica = SiteReplica(
                job.model,
                # Each site's share, derived as a real site derives its own.
                data.train.subset(share_indices(labels, job.site_share(i, len(names)))),
                batch,
                job.site_optimizer,
                model_seed=job.seed,
                data_seed=job.site_seed(i),
                total_clocks=job.clocks,
            )
            counts = replica.train.class_counts()
            policy = build_policy(job.geo, i, len(names), replica.params, class_counts=counts)
            guard = DivergenceGuard.for_classes(data.train.num_classes)
            step_s, eval_s = compute.step_for(name), compute.eval_for(name)
            site = SimSite(i, name, replica, policy, step_s, eval_s, guard=guard)
            self.sites.append(site)
        self.links = {
            (a, b): SimulatedLink(
                link_topology.link(names[a], names[b]),
                self.events,
                lambda message, now, to=b: self._arrive(to, message, now),
                masked=names[a] < names[b],  # the site whose name sorts first dials
            )
            for a in range(len(names))
            for b in range(len(names))
            if a != b
        }
        self.timeline = AccuracyTimeline(len(names))
        self.end_clock = job.clocks
        self._accuracy_cache: dict[bytes, float] = {}
        self.diverged: tuple[str, Diverged] | None = None

    # -- the event loop ---------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        wall_start = time.perf_counter()
        for site in self.sites:
            self.events.at(0.0, lambda now, s=site: self._try_start(s, now))
        while self.events.run_next():
            pass
        stuck = [s for s in self.sites if s.state != State.DONE]
        if stuck:
            raise AtollError(f"simulation deadlocked: {self._describe_waits(stuck)}")
        return self._summary(time.perf_counter() - wall_start)

    def _try_start(self, site: SimSite, now: float) -> None:
        if site.policy.clock >= self.end_clock:
            site.state = State.FINISHING
            self._send(site, site.policy.finish(now), now)
            self._check_done(site, now)
            return
        if isinstance(site.policy.before_clock(now), Wait):
            site.state = State.WAITING
            return
        pause = 0.0
        if site.policy.clock % self.job.eval_every == 0 and site.policy.clock > 0:
            # The replica as it is about to be trained on, stamped when the evaluation ends,
            # as a real site stamps it. The site computes only after it: what arrives in the
            # meantime waits for the clock boundary, as a real site's mirror leaves it queued.
            pause = site.eval_s
            self._evaluate(site, now + pause)
        site.state = State.COMPUTING
        site.delta, site.loss = site.replica.step(
            site.policy.clock, site.policy.update_scale, site.policy.lookahead(now)
        )
        verdict = site.guard.observe(site.policy.clock, site.loss)
        if verdict is not None and self.diverged is None:
            self._stop_diverged(site, verdict)
        # The lookahead and the gradient are as of `now`, before the pause: a real site fills
        # its lookahead before it evaluates, and applies nothing until the clock ends.
        self.events.at(now + pause + site.step_s, lambda t: self._clock_done(site, t))

    def _stop_diverged(self, site: SimSite, verdict: Diverged) -> None:
        """Say so, and end the run: every site finishes one clock past the furthest."""
        self.diverged = (site.name, verdict)
        event = SimDiverged(
            site=site.name, clock=verdict.clock, loss=verdict.loss, reason=verdict.reason
        )
        self.on_event(event)
        self.end_clock = min(self.end_clock, max(s.policy.clock for s in self.sites) + 1)

    def _clock_done(self, site: SimSite, now: float) -> None:
        policy = site.policy
        for mirror in policy.mirrors:
            policy.link_backlog(mirror, self.links[(site.index, mirror)].backlog_s(now))
        sent = self._bytes_sent_by(site.index)
        if now > site.time_at_last_clock:
            policy.wan_usage(
                8 * (sent - site.bytes_at_last_clock) / (now - site.time_at_last_clock)
            )
        site.bytes_at_last_clock, site.time_at_last_clock = sent, now
        lr_ratio = site.replica.lr_ratio(policy.clock)
        self._send(site, policy.after_clock(site.delta, now, lr_ratio), now)
        inbox, site.inbox = site.inbox, []
        for message in inbox:
            self._send(site, policy.receive(message, now), now)
        self._try_start(site, now)

    def _arrive(self, to: int, message: GeoMessage, now: float) -> None:
        site = self.sites[to]
        if site.state == State.COMPUTING:
            site.inbox.append(message)
            return
        self._send(site, site.policy.receive(message, now), now)
        if site.state == State.WAITING:
            self._try_start(site, now)
        elif site.state == State.FINISHING:
            self._check_done(site, now)

    def _check_done(self, site: SimSite, now: float) -> None:
        if site.policy.done(now):
            site.state = State.DONE
            self._evaluate(site, now)
            site.final_accuracy = evaluate(site.replica.flat.model, self.test).accuracy
            self.on_event(SimSiteDone(site=site.name, time_s=now))

    def _send(self, site: SimSite, outbound: list[Outbound], now: float) -> None:
        for out in outbound:
            targets = site.policy.mirrors if out.to == BROADCAST else [out.to]
            nbytes = encoded_size(out.message)
            for target in targets:
                self.links[(site.index, target)].send(out.message, nbytes, out.lane, now)

    # -- measurements -----------------------------------------------------------------

    def _evaluate(self, site: SimSite, now: float) -> None:
        accuracy = self._accuracy(site)
        clock = site.policy.clock
        point = self.timeline.report(site.index, clock, accuracy, now, self._bytes_sent())
        if point is None:
            return
        self.on_event(
            TimelinePoint(
                clock=point.clock,
                time_s=point.time_s,
                mean_accuracy=point.mean_accuracy,
                min_accuracy=point.min_accuracy,
                wan_bytes=point.wan_bytes,
                links=self._link_bytes(),
                stall_s=self._mean_stall(),
            )
        )
        target = self.job.target_accuracy
        if self.job.stop_at_target and target and point.mean_accuracy >= target:
            # Every site runs to one clock past the furthest, so flushes meet.
            self.end_clock = min(self.end_clock, max(s.policy.clock for s in self.sites) + 1)

    def _accuracy(self, site: SimSite) -> float:
        """Replicas that are bit-identical (after a BSP round, say) are evaluated once."""
        params = site.replica.params
        key = hashlib.blake2b(params.numpy().tobytes(), digest_size=16).digest()
        if key not in self._accuracy_cache:
            self._accuracy_cache[key] = evaluate(site.replica.flat.model, self.eval_subset).accuracy
        return self._accuracy_cache[key]

    def _bytes_sent(self) -> int:
        return sum(link.bytes_sent for link in self.links.values())

    def _bytes_sent_by(self, site: int) -> int:
        return sum(link.bytes_sent for (a, _), link in self.links.items() if a == site)

    def _link_bytes(self) -> dict[str, int]:
        names = self.topology.sites
        return {f"{names[a]}->{names[b]}": link.bytes_sent for (a, b), link in self.links.items()}

    def _mean_stall(self) -> float:
        return sum(s.policy.stall_s for s in self.sites) / len(self.sites)

    def _describe_waits(self, stuck: list[SimSite]) -> str:
        parts = []
        for site in stuck:
            decision = site.policy.before_clock(self.events.now)
            why = decision.reason if isinstance(decision, Wait) else site.state.name.lower()
            parts.append(f"{site.name} at clock {site.policy.clock} ({why})")
        return "; ".join(parts)

    def _summary(self, wall_s: float) -> dict[str, Any]:
        finals = [s.final_accuracy or 0.0 for s in self.sites]
        target = self.job.target_accuracy
        reached: Point | None = self.timeline.first_reaching(target) if target else None
        return {
            "runtime": "simulated",
            "policy": self.job.geo.label,
            "final_accuracy": sum(finals) / len(finals),
            "min_site_accuracy": min(finals),
            "target_accuracy": target,
            "time_to_target_s": reached.time_s if reached else None,
            "clocks_to_target": reached.clock if reached else None,
            "time_kind": "virtual",
            "wan_bytes": self._bytes_sent(),
            "wan_bytes_to_target": reached.wan_bytes if reached else None,
            "links": self._link_bytes(),
            "diverged": None
            if self.diverged is None
            else {"site": self.diverged[0], **self.diverged[1].__dict__},
            "stall_s": self._mean_stall(),
            "clocks": max(s.policy.clock for s in self.sites),
            "virtual_time_s": self.events.now,
            "wall_s": wall_s,
            "compute_profile": {
                "step_s": self.compute.step_s,
                "eval_s": self.compute.eval_s,
                "source": self.compute.source,
            },
            "sites": [
                {
                    "name": s.name,
                    "samples": len(s.replica.train),
                    "final_accuracy": s.final_accuracy,
                    **s.policy.stats(),
                }
                for s in self.sites
            ],
            "timeline": [p.__dict__ for p in self.timeline.points],
            "config": self.job.model_dump(mode="json"),
        }
