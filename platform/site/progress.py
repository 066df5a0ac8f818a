"""A site's progress from its run log, sans I/O: the one fold the local launcher and the
edge agent both use.

`atoll site run` appends its events to log.jsonl, and a resumed run appends to the same
file, so replaying the file from the start always gives the same answer: a supervisor
that restarts rebuilds its view from the log alone. Each run of the site (a `started`
event each: an incarnation) counts its WAN bytes and stall from zero again; the totals
add up every incarnation.
"""

from dataclasses import dataclass, field
from typing import Literal

from atoll.platform.core.events import (
    Evaluated,
    GeoStats,
    RunEvent,
    StepDone,
    TrainingFailed,
    TrainingFinished,
    TrainingStarted,
)

# What an event is worth as a telemetry sample: a clock, an evaluation, WAN counters, the end.
Sample = Literal["step", "eval", "geo", "end"]


@dataclass(frozen=True)
class EvalPoint:
    clock: int
    accuracy: float
    time: float  # wall time of the evaluation


@dataclass
class SiteProgress:
    incarnation: int = 0
    clock: int = 0
    total_clocks: int | None = None
    loss: float | None = None
    accuracy: float | None = None  # the latest periodic evaluation
    final_accuracy: float | None = None  # on the whole test set, once trained to the end
    started_at: float | None = None  # the first incarnation's start
    finished_at: float | None = None
    completed: bool = False  # trained to the end (not stopped early)
    failure: str | None = None  # why its latest incarnation failed, if it did
    started: TrainingStarted | None = None  # the latest start: the site's data and model
    evals: list[EvalPoint] = field(default_factory=list)
    traffic: list[tuple[float, int]] = field(default_factory=list)  # time, wan_bytes by then
    # Each shard's latest cumulative counters, by (incarnation, rank, shard).
    _bytes: dict[tuple[int, int, int], int] = field(default_factory=dict)
    _stall: dict[tuple[int, int, int], float] = field(default_factory=dict)
    _links: dict[tuple[int, int], dict[str, int]] = field(default_factory=dict)

    @property
    def wan_bytes(self) -> int:
        return sum(self._bytes.values())

    @property
    def stall_s(self) -> float:
        """Seconds the site held its clocks waiting on the other sites.

        A rank syncs its shards one after the other, and a shard's policy counts only
        the time it was itself told to wait, so a rank's waits add up; the ranks wait
        at the same time, and the site's next clock needs every rank, so the site waited
        as long as its slowest rank. Incarnations follow one another: they add up.
        (Before: the launcher took the largest shard's count over all incarnations and
        the agent the largest shard's per incarnation; both undercount a site whose rank
        owns several shards, and the launcher's a site that restarted.)
        """
        by_rank: dict[tuple[int, int], float] = {}
        for (incarnation, rank, _), stall in self._stall.items():
            by_rank[(incarnation, rank)] = by_rank.get((incarnation, rank), 0.0) + stall
        slowest: dict[int, float] = {}
        for (incarnation, _), stall in by_rank.items():
            slowest[incarnation] = max(slowest.get(incarnation, 0.0), stall)
        return sum(slowest.values())

    @property
    def link_bytes(self) -> dict[str, int]:
        """Bytes sent on each of the site's links ('site->peer'), over every incarnation."""
        total: dict[str, int] = {}
        for links in self._links.values():
            for link, sent in links.items():
                total[link] = total.get(link, 0) + sent
        return total

    def apply(self, event: RunEvent) -> Sample | None:
        """Take one log event; returns the kind of telemetry sample it is worth, if any."""
        sample: Sample | None = None
        match event:
            case TrainingStarted():
                self.incarnation += 1
                self.started = event
                self.clock, self.total_clocks = event.step, event.total_steps
                if self.started_at is None:
                    self.started_at = event.time
                self.failure = None
            case StepDone():
                self.clock, self.loss = event.step, event.loss
                sample = "step"
            case Evaluated():
                self.accuracy = event.test_accuracy
                self.evals.append(EvalPoint(event.step, event.test_accuracy, event.time))
                sample = "eval"
            case GeoStats():
                self._on_geo(event)
                sample = "geo"
            case TrainingFinished():
                self.clock, self.finished_at = event.step, event.time
                self.completed = not event.stopped
                if self.completed:
                    self.final_accuracy = self.accuracy = event.test_accuracy
                sample = "end"
            case TrainingFailed():
                self.failure = event.message
                sample = "end"
        return sample

    def _on_geo(self, event: GeoStats) -> None:
        key = (self.incarnation, event.rank, event.shard)
        self._bytes[key] = event.bytes_sent
        self._stall[key] = event.stall_s
        self._links[(self.incarnation, event.shard)] = dict(event.links)
        self.traffic.append((event.time, self.wan_bytes))
