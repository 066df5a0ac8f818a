"""The cartel simulator: many sites in virtual time, real training math.

Each batch interval every site draws a batch from its stream, scores it, trains
on it and measures its accuracy on a test sample of its current mix. Messages
(reports, neighbour queries, parts) take a latency plus their bytes over the
link's bandwidth, and arrive at the first batch after that. The cartel policies
drive `CartelSite` exactly as the edge agent does; the baselines run in the same
loop with the same models, streams and accounting.
"""

import heapq
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from atoll.platform.core.host_memory import keep_freed_memory
from atoll.platform.data.datasets import TrainTest
from atoll.platform.transfer.adapt import Adaptation, time_to_adapt
from atoll.platform.transfer.config import CartelConfig
from atoll.platform.transfer.core import (
    AskNeighbours,
    BatchScored,
    CartelSite,
    Effect,
    FetchFailed,
    FetchPart,
    Input,
    Log,
    MergePart,
    NeighboursFound,
    PartArrived,
    RecordLineage,
    ReportSent,
    SendReport,
)
from atoll.platform.transfer.models import OnlineModel
from atoll.platform.transfer.neighbours import (
    SiteReport,
    choose_neighbours,
    decode_report,
    encode_report,
)
from atoll.platform.transfer.parts import decode_part, encode_part
from atoll.platform.transfer.scenarios import StreamSampler, build_streams

Policy = Literal["cartel", "random-neighbour", "isolated", "fedavg", "centralized"]
POLICIES: tuple[Policy, ...] = ("cartel", "random-neighbour", "isolated", "fedavg", "centralized")
LINEAGE_BYTES = 200  # a lineage record as the registry receives it
QUERY_HEADER_BYTES = 96  # a neighbour query's site name, signature and framing


@dataclass(frozen=True)
class SimSettings:
    scenario: str
    model: str
    policy: str = "cartel"  # one of POLICIES
    sites: int = 8
    batches: int = 240
    batch_size: int = 10
    seed: int = 0
    batch_seconds: float = 1.0  # a batch arrives at each site every this many seconds
    latency_s: float = 0.05  # one way, site to site and site to registry
    bandwidth_bps: float = 100e6  # bits per second on every link
    sync_every: int = 10  # fedavg rounds and centralized pushes, in batches
    dead_sites: tuple[int, ...] = ()  # sites that never answer a fetch (fault injection)
    cartel: CartelConfig = field(default_factory=CartelConfig)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; choose one of {', '.join(POLICIES)}")


@dataclass
class SiteResult:
    site: int
    accuracy: list[float]
    onsets: list[int]
    adaptations: list[Adaptation]
    train_s: float
    transfers: list[dict[str, object]]


@dataclass
class SimResult:
    settings: SimSettings
    sites: list[SiteResult]
    bytes_by_kind: dict[str, int]
    model_bytes: int
    reports: int
    query_ms: list[float]
    duration_s: float

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_kind.values())

    def drifted(self) -> list[Adaptation]:
        return [a for s in self.sites for a in s.adaptations]

    def summary(self) -> dict[str, Any]:
        adaptations = self.drifted()
        final = [float(np.mean(s.accuracy[-20:])) for s in self.sites]
        virtual_s = self.settings.batches * self.settings.batch_seconds
        return {
            "scenario": self.settings.scenario,
            "policy": self.settings.policy,
            "model": self.settings.model,
            "sites": self.settings.sites,
            "batches": self.settings.batches,
            "seed": self.settings.seed,
            "merge": self.settings.cartel.merge,
            "detector": self.settings.cartel.detector,
            "adapt_batches": float(np.mean([a.batches for a in adaptations]))
            if adaptations
            else None,
            "adapt_seconds": float(np.mean([a.batches for a in adaptations]))
            * self.settings.batch_seconds
            if adaptations
            else None,
            "all_adapted": all(a.adapted for a in adaptations),
            "adaptations": [asdict(a) for a in adaptations],
            "final_accuracy": float(np.mean(final)),
            "bytes": self.total_bytes,
            "bytes_by_kind": dict(self.bytes_by_kind),
            "model_bytes": self.model_bytes,
            "train_s_per_site": float(np.mean([s.train_s for s in self.sites])),
            "reports": self.reports,
            "reports_per_s": self.reports / virtual_s,
            "query_ms_mean": float(np.mean(self.query_ms)) if self.query_ms else None,
            "transfers": [t for s in self.sites for t in s.transfers],
            "wall_s": self.duration_s,
        }


Emit = Callable[[dict[str, object]], None]


class CartelSimulation:
    def __init__(self, settings: SimSettings, data: TrainTest, emit: Emit | None = None) -> None:
        keep_freed_memory()  # every site's model trains and evaluates in this process
        self.s = settings
        self.data = data
        self.emit: Emit = emit or (lambda event: None)
        streams = build_streams(
            settings.scenario, settings.sites, settings.batches, data.train.num_classes
        )
        self.streams = streams
        self.samplers = [
            StreamSampler(st, data.train, data.test, settings.sites, settings.seed)
            for st in streams
        ]
        shape, classes = data.train.input_shape, data.train.num_classes
        # Every site starts from the same seeded initial model, as the job would give it.
        self.models = [OnlineModel(settings.model, shape, classes, settings.seed) for _ in streams]
        self.central = (
            OnlineModel(settings.model, shape, classes, settings.seed)
            if settings.policy == "centralized"
            else None
        )
        cartel = settings.policy in ("cartel", "random-neighbour")
        config = settings.cartel.model_copy(
            update={
                "neighbour_choice": "random" if settings.policy == "random-neighbour" else "jsd"
            }
        )
        self.cores = (
            [
                CartelSite(
                    f"site-{i}",
                    config.model_copy(update={"seed": settings.seed * 100 + i}),
                    classes,
                    self.models[i].signature,
                    self.models[i].shapes(),
                )
                for i in range(settings.sites)
            ]
            if cartel
            else []
        )
        self.directory: dict[str, SiteReport] = {}
        self.registry_rng = np.random.default_rng([settings.seed, 1])
        self.queue: list[tuple[float, int, int, Input]] = []
        self._seq = 0
        self.bytes: dict[str, int] = defaultdict(int)
        self.train_s = [0.0] * settings.sites
        self.query_ms: list[float] = []
        self.transfers: list[list[dict[str, object]]] = [[] for _ in streams]
        self.now = 0.0

    # Messages

    def _deliver(self, site: int, after_s: float, event: Input) -> None:
        heapq.heappush(self.queue, (self.now + after_s, self._seq, site, event))
        self._seq += 1

    def _transit(self, size: int) -> float:
        return self.s.latency_s + 8 * size / self.s.bandwidth_bps

    def _count(self, kind: str, size: int, site: int) -> None:
        self.bytes[kind] += size
        self.emit({"kind": "bytes", "time_s": self.now, "site": site, "what": kind, "bytes": size})

    def _apply(self, site: int, effects: list[Effect]) -> None:
        core = self.cores[site]
        for effect in effects:
            if isinstance(effect, SendReport):
                blob = encode_report(effect.report)
                self._count("metadata", len(blob), site)
                # The registry keeps what it decoded: the report to the wire's precision.
                self.directory[core.site] = decode_report(blob)
                self._apply(site, core.handle(ReportSent(ok=True)))
            elif isinstance(effect, AskNeighbours):
                started = time.perf_counter()
                reports = self._registry_neighbours(core, effect)
                self.query_ms.append((time.perf_counter() - started) * 1000)
                # The query: site name, signature, priors (uint16) and drifted classes.
                request = QUERY_HEADER_BYTES + 2 * len(effect.priors) + len(effect.drifted)
                answer = sum(len(encode_report(r)) for r in reports)
                self._count("metadata", request + answer, site)
                self._deliver(site, 2 * self._transit(answer), NeighboursFound(reports))
            elif isinstance(effect, FetchPart):
                source = int(effect.source.site.split("-")[1])
                if source in self.s.dead_sites:
                    self._deliver(site, 1.0, FetchFailed(effect.source.site, "no answer in 1 s"))
                    continue
                giver = self.cores[source] if self.cores else None
                part = self.models[source].part(
                    effect.source.site,
                    giver.version if giver else 0,
                    effect.classes,
                    giver.class_samples if giver else np.zeros(1),
                    giver.samples if giver else 0,
                )
                # What travels is the wire form; the site merges what it decodes.
                blob = encode_part(part, core.config.part_wire_dtype)
                self._count("model-part", len(blob), site)
                self._deliver(site, 2 * self._transit(len(blob)), PartArrived(decode_part(blob)))
            elif isinstance(effect, MergePart):
                self.models[site].merge(effect.part, core)
            elif isinstance(effect, RecordLineage):
                self._count("lineage", LINEAGE_BYTES, site)
                record = asdict(effect)
                self.transfers[site].append(record)
                # The lineage's own "kind" is the part's (rows, head); the event's is "transfer".
                event = {**record, "part": record["kind"], "kind": "transfer"}
                self.emit({**event, "batch": self.batch})
            elif isinstance(effect, Log):
                self.emit(
                    {
                        "kind": "log",
                        "time_s": self.now,
                        "site": core.site,
                        "event": effect.event,
                        "message": effect.message,
                    }
                )

    # The loop

    def run(self) -> SimResult:
        started = time.perf_counter()
        s = self.s
        accuracy: list[list[float]] = [[] for _ in self.streams]
        for batch in range(s.batches):
            self.batch = batch
            self._arrive(batch * s.batch_seconds, inclusive=True)
            self.now = batch * s.batch_seconds
            for i, sampler in enumerate(self.samplers):
                x, y = sampler.batch(batch, s.batch_size)
                tick = time.perf_counter()
                if self.central is not None:
                    # The site ships its raw samples (a byte per pixel, one per label).
                    self._count("raw-data", int(x[0].numel() + 1) * len(y), i)
                    self.central.train(x, y)
                else:
                    correct = self.models[i].score_then_train(x, y)
                    if self.cores:
                        event = BatchScored(self.now, y.tolist(), correct.tolist())
                        self._apply(i, self.cores[i].handle(event))
                self.train_s[i] += time.perf_counter() - tick
            # A site's accuracy for second `batch` is that of the model it holds at the
            # end of that second: what arrived within it (a neighbour's part, 0.2 s after
            # a drift) counts, as it serves the rest of the second.
            self._arrive((batch + 1) * s.batch_seconds, inclusive=False)
            self.now = batch * s.batch_seconds
            for i, sampler in enumerate(self.samplers):
                tx, ty = sampler.test_set(batch)
                acc = self.models[i].evaluate(tx, ty)
                accuracy[i].append(acc)
                self.emit(
                    {
                        "kind": "accuracy",
                        "batch": batch,
                        "time_s": self.now,
                        "site": i,
                        "accuracy": acc,
                    }
                )
            if (batch + 1) % s.sync_every == 0:
                self._sync()
        results = []
        for i, stream in enumerate(self.streams):
            ends = [*stream.onsets[1:], s.batches][: len(stream.onsets)]
            adaptations = [
                time_to_adapt(accuracy[i], o, e) for o, e in zip(stream.onsets, ends, strict=True)
            ]
            results.append(
                SiteResult(
                    i, accuracy[i], stream.onsets, adaptations, self.train_s[i], self.transfers[i]
                )
            )
        return SimResult(
            settings=s,
            sites=results,
            bytes_by_kind=dict(self.bytes),
            model_bytes=self.models[0].size_bytes(),
            reports=sum(c.reports_sent for c in self.cores),
            query_ms=self.query_ms,
            duration_s=time.perf_counter() - started,
        )

    def _registry_neighbours(self, core: CartelSite, ask: AskNeighbours) -> list[SiteReport]:
        """The registry answers with the k sites it would pick (Cartel's metadata service
        ranks and filters; it does not ship its whole directory to every asking site)."""
        config = core.config
        return choose_neighbours(
            list(self.directory.values()),
            asking=core.site,
            priors=ask.priors,
            signature=ask.signature,
            drifted=ask.drifted,
            now_s=self.now,
            live_window_s=config.live_window_s,
            min_accuracy=config.min_neighbour_accuracy
            if ask.min_accuracy is None
            else ask.min_accuracy,
            k=config.k,
            rng=self.registry_rng if config.neighbour_choice == "random" else None,
        )

    def _arrive(self, until_s: float, inclusive: bool) -> None:
        """Messages in flight arrive in their own time, replies to them too, up to until_s."""
        while self.queue and (
            self.queue[0][0] <= until_s if inclusive else self.queue[0][0] < until_s
        ):
            self.now, _, site, event = heapq.heappop(self.queue)
            self._apply(site, self.cores[site].handle(event))

    def _sync(self) -> None:
        size = self.models[0].size_bytes()
        if self.central is not None:
            state = self.central.arrays()
            for i, model in enumerate(self.models):
                model.load(state)
                self._count("model-push", size, i)
        elif self.s.policy == "fedavg":
            states = [m.arrays() for m in self.models]
            mean = {
                n: np.mean([st[n] for st in states], axis=0).astype(np.float32) for n in states[0]
            }
            for i, model in enumerate(self.models):
                model.load(mean)
                self._count("model-sync", 2 * size, i)


def run_simulation(settings: SimSettings, data: TrainTest, emit: Emit | None = None) -> SimResult:
    torch.manual_seed(settings.seed)
    return CartelSimulation(settings, data, emit).run()
