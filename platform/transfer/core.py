"""One cartel site as a sans-IO state machine: an input in, effects out.

Inputs are what happened (a batch was scored, the registry answered, a part
arrived or did not); effects are what the driver must do (send a report, ask
for neighbours, fetch a part, merge it, record lineage, log). No clock, socket
or thread in here: the simulator and the edge agent drive the same class.
"""

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import poisson

from atoll.platform.transfer.config import CartelConfig
from atoll.platform.transfer.drift import Detector, make_detector
from atoll.platform.transfer.neighbours import SiteReport, choose_neighbours, divergence
from atoll.platform.transfer.parts import ModelPart, PartRefused, check_part
from atoll.platform.transfer.resume import CoreState

RARE = 0.001  # a class count this unlikely under the old priors means they changed

# Inputs


@dataclass(frozen=True)
class BatchScored:
    """A batch scored by the model before it trained on it (test, then train)."""

    time_s: float
    labels: Sequence[int]
    correct: Sequence[bool]


@dataclass(frozen=True)
class ReportSent:
    ok: bool
    reason: str = ""


@dataclass(frozen=True)
class NeighboursFound:
    reports: Sequence[SiteReport]  # candidates as the registry gave them


@dataclass(frozen=True)
class NeighboursRanked:
    """Candidates a registry has already chosen: same signature, live, nearest first by
    Jensen-Shannon divergence. A registry keeps no per-class accuracy, so each giver
    checks its own on the drifted classes (messages.declines) and may decline."""

    reports: Sequence[SiteReport]


@dataclass(frozen=True)
class NeighboursFailed:
    reason: str


@dataclass(frozen=True)
class PartArrived:
    part: ModelPart


@dataclass(frozen=True)
class FetchFailed:
    source: str
    reason: str


Input = (
    BatchScored
    | ReportSent
    | NeighboursFound
    | NeighboursRanked
    | NeighboursFailed
    | PartArrived
    | FetchFailed
)

# Effects


@dataclass(frozen=True)
class SendReport:
    report: SiteReport


@dataclass(frozen=True)
class AskNeighbours:
    priors: tuple[float, ...]
    drifted: tuple[int, ...]
    signature: str
    min_accuracy: float | None = None  # the bar on the drifted classes (None: the config's)


@dataclass(frozen=True)
class FetchPart:
    source: SiteReport
    classes: tuple[int, ...]


@dataclass(frozen=True)
class MergePart:
    part: ModelPart


@dataclass(frozen=True)
class RecordLineage:
    site: str
    version: int
    source: str
    source_version: int
    kind: str
    classes: tuple[int, ...]
    policy: str
    time_s: float


@dataclass(frozen=True)
class Log:
    event: str  # drift | neighbours | refused | fetch-failed | gave-up | registry-down | merged
    message: str
    fields: Mapping[str, object] = field(default_factory=dict)


Effect = SendReport | AskNeighbours | FetchPart | MergePart | RecordLineage | Log


class CartelSite:
    """Phases: training -> (drift) asking -> fetching -> training, with a cooldown
    after each transfer or failed search so that one drift starts one transfer."""

    def __init__(
        self,
        site: str,
        config: CartelConfig,
        num_classes: int,
        signature: str,
        shapes: Mapping[str, tuple[int, ...]],
        endpoint: str | None = None,
    ) -> None:
        self.site = site
        self.config = config
        self.num_classes = num_classes
        self.signature = signature
        self.shapes = dict(shapes)
        self.endpoint = endpoint
        self.detector: Detector = make_detector(config)
        self.rng = np.random.default_rng(config.seed)
        self.batches = 0
        self.samples = 0
        self.version = 0
        self.time_s = 0.0
        self.class_samples = np.zeros(num_classes, dtype=np.int64)
        self._label_counts: deque[np.ndarray] = deque(maxlen=config.priors_window)
        self._scored: deque[tuple[np.ndarray, np.ndarray]] = deque(maxlen=config.accuracy_window)
        self.phase = "training"
        self.cooldown_left = 0
        self.drifted: tuple[int, ...] = ()
        self.bar = config.min_neighbour_accuracy
        self.candidates: list[SiteReport] = []
        self.last_reported: tuple[float, ...] | None = None
        self.last_reported_accuracy = 0.0
        self.last_report_batch = 0
        self.report_pending = False
        self.registry_down = False
        self.drift_flag = False
        self.reports_sent = 0
        self.transfers = 0

    # What the site knows about itself

    def priors(self) -> tuple[float, ...]:
        counts = np.sum(self._label_counts, axis=0) if self._label_counts else None
        if counts is None or counts.sum() == 0:
            return tuple([1.0 / self.num_classes] * self.num_classes)
        return tuple(float(c) for c in counts / counts.sum())

    def class_accuracy(self, last: int | None = None, min_count: int = 5) -> list[float | None]:
        scored = list(self._scored)[-last:] if last else list(self._scored)
        right = np.zeros(self.num_classes)
        seen = np.zeros(self.num_classes)
        for labels, correct in scored:
            np.add.at(seen, labels, 1)
            np.add.at(right, labels, correct)
        return [
            float(right[c] / seen[c]) if seen[c] >= min_count else None
            for c in range(self.num_classes)
        ]

    def drifted_classes(self) -> list[int]:
        """Classes the model now gets wrong that either come more often than before or
        lost accuracy, among those behind a good share of the recent errors (a class
        seen twice and missed once is noise; one the site always got wrong is no drift)."""
        window = self.config.drift_window
        scored = list(self._scored)
        now_seen, now_wrong = _tally(scored[-window:], self.num_classes)
        before_seen, before_wrong = _tally(scored[:-window], self.num_classes)
        share_now = now_seen / max(now_seen.sum(), 1)
        share_before = before_seen / max(before_seen.sum(), 1)
        error_share = now_wrong / max(now_wrong.sum(), 1)
        poor = []
        for c in range(self.num_classes):
            if now_seen[c] < 2 or error_share[c] < 0.1:
                continue
            accuracy = 1 - now_wrong[c] / now_seen[c]
            if accuracy >= self.config.poor_class_accuracy:
                continue
            # Rose: this many samples would be rare (p < 0.001) at the class's share
            # before. A tail class (2%) seen 3 times in 20 samples happens every few
            # hundred batches per class and site: a false alarm that would cost a part.
            expected = share_before[c] * now_seen.sum()
            rose = (
                share_now[c] >= 1.5 * share_before[c]
                and float(poisson.sf(now_seen[c] - 1, expected)) < RARE / self.num_classes
            )
            lost = (  # a drop measured on too few samples is noise
                now_seen[c] >= 10
                and before_seen[c] >= 10
                and 1 - before_wrong[c] / before_seen[c] - accuracy >= self.config.drift_limit
            )
            if rose or lost:
                poor.append(c)
        # Error rose but no class stands out: noise on a small batch, not drift. Asking
        # on it cost a part per false alarm and a cooldown that could hide a real drift.
        return poor

    def accuracy(self) -> float:
        total = sum(len(lbl) for lbl, _ in self._scored)
        right = sum(int(c.sum()) for _, c in self._scored)
        return right / total if total else 0.0

    def report(self) -> SiteReport:
        return SiteReport(
            site=self.site,
            time_s=self.time_s,
            class_priors=self.priors(),
            accuracy=self.accuracy(),
            class_accuracy=tuple(self.class_accuracy()),
            class_samples=tuple(int(n) for n in self.class_samples),
            samples=self.samples,
            signature=self.signature,
            version=self.version,
            drift=self.drift_flag,
            endpoint=self.endpoint,
        )

    # A checkpoint's part (resume.py says what is kept and why)

    def snapshot(self) -> CoreState:
        return CoreState(
            batches=self.batches,
            samples=self.samples,
            version=self.version,
            time_s=self.time_s,
            class_samples=tuple(int(n) for n in self.class_samples),
            label_counts=tuple(tuple(int(n) for n in c) for c in self._label_counts),
            scored=tuple(
                (tuple(int(v) for v in lbl), tuple(bool(v) for v in ok)) for lbl, ok in self._scored
            ),
            cooldown_left=self.cooldown_left,
            bar=self.bar,
            last_reported=self.last_reported,
            last_reported_accuracy=self.last_reported_accuracy,
            last_report_batch=self.last_report_batch,
            reports_sent=self.reports_sent,
            transfers=self.transfers,
            rng=self.rng.bit_generator.state,
        )

    def restore(self, state: CoreState) -> None:
        """Onto a core just made for the same job: back to training, detector empty."""
        if len(state.class_samples) != self.num_classes:
            raise ValueError(
                f"the checkpoint counts {len(state.class_samples)} classes, not {self.num_classes}"
            )
        self.batches, self.samples, self.version = state.batches, state.samples, state.version
        self.time_s = state.time_s
        self.class_samples = np.array(state.class_samples, dtype=np.int64)
        self._label_counts.clear()
        self._label_counts.extend(np.array(c, dtype=np.int64) for c in state.label_counts)
        self._scored.clear()
        self._scored.extend(
            (np.array(lbl, dtype=np.int64), np.array(ok, dtype=bool)) for lbl, ok in state.scored
        )
        self.cooldown_left, self.bar = state.cooldown_left, state.bar
        self.last_reported = state.last_reported
        self.last_reported_accuracy = state.last_reported_accuracy
        self.last_report_batch = state.last_report_batch
        self.reports_sent, self.transfers = state.reports_sent, state.transfers
        self.rng.bit_generator.state = state.rng
        self.report_pending = True

    # Inputs

    def handle(self, event: Input) -> list[Effect]:
        if isinstance(event, BatchScored):
            return self._batch(event)
        if isinstance(event, ReportSent):
            return self._report_sent(event)
        if isinstance(event, NeighboursFound | NeighboursRanked):
            return self._neighbours(event)
        if isinstance(event, NeighboursFailed):
            return self._give_up(f"no neighbours: {event.reason}", "registry-down")
        if isinstance(event, PartArrived):
            return self._part(event.part)
        return self._fetch_failed(event)

    def _batch(self, event: BatchScored) -> list[Effect]:
        labels = np.asarray(event.labels, dtype=np.int64)
        correct = np.asarray(event.correct, dtype=bool)
        if len(labels) != len(correct):
            raise ValueError(f"{len(labels)} labels but {len(correct)} scores")
        self.time_s = event.time_s
        self.batches += 1
        self.samples += len(labels)
        self.version += 1
        self._label_counts.append(np.bincount(labels, minlength=self.num_classes))
        self._scored.append((labels, correct))
        np.add.at(self.class_samples, labels, 1)
        effects: list[Effect] = []
        errors = [int(not c) for c in correct]
        fired = self.detector.update(errors)
        if self.cooldown_left > 0:
            self.cooldown_left -= 1
            if self.cooldown_left == 0:
                self.detector.reset()
        elif fired and self.phase == "training" and self.batches > self.config.warmup:
            effects += self._drift()
        if self._report_due():
            effects.append(self._send_report())
        return effects

    def _report_due(self) -> bool:
        if self.report_pending:
            return True
        every = self.config.report_every
        if every and self.batches - self.last_report_batch >= every:
            return True
        if self.last_reported is None:
            return True
        moved = self.config.accuracy_move_threshold
        if moved is not None and abs(self.accuracy() - self.last_reported_accuracy) > moved:
            return True  # neighbours are chosen by reported accuracy: keep it fresh
        threshold = self.config.prior_move_threshold
        return threshold is not None and divergence(self.priors(), self.last_reported) > threshold

    def _send_report(self) -> SendReport:
        report = self.report()
        self.last_reported = report.class_priors
        self.last_reported_accuracy = report.accuracy
        self.last_report_batch = self.batches
        self.report_pending = False
        self.reports_sent += 1
        return SendReport(report)

    def _report_sent(self, event: ReportSent) -> list[Effect]:
        if event.ok:
            if self.registry_down:
                self.registry_down = False
                return [Log("registry-up", "registry answers again; reports resume")]
            return []
        # Keep training alone; the next batch sends a fresh report (catching up).
        self.report_pending = True
        if self.registry_down:
            return []
        self.registry_down = True
        return [Log("registry-down", f"report not delivered ({event.reason}); training alone")]

    def _drift(self) -> list[Effect]:
        poor = self.drifted_classes()
        if not poor:
            return [
                Log(
                    "drift-noise",
                    f"{self.detector.name} fired at batch {self.batches} but no class "
                    "stands out; not asking",
                    {"detector": self.detector.name},
                )
            ]
        self.drifted = tuple(poor)
        self.bar = self.neighbour_bar()
        self.drift_flag = True
        self.phase = "asking"
        priors = self.priors()
        return [
            Log(
                "drift",
                f"{self.detector.name} fired at batch {self.batches}; "
                f"drifted classes {list(self.drifted)}",
                {"detector": self.detector.name, "classes": list(self.drifted)},
            ),
            self._send_report(),
            AskNeighbours(priors, self.drifted, self.signature, self.bar),
        ]

    def neighbour_bar(self) -> float:
        """How good a neighbour must be on the drifted classes: min_neighbour_accuracy, or
        this site's own accuracy before the drift window if lower. A neighbour as good on
        the new classes as the site was on its old ones can bring it back to its level;
        an absolute bar above what any site of a slow learner reaches (logistic
        regression on digits, about 0.6 at the drift) ruled out every neighbour."""
        before = list(self._scored)[: -self.config.drift_window]
        total = sum(len(labels) for labels, _ in before)
        if not total:
            return self.config.min_neighbour_accuracy
        own = sum(int(correct.sum()) for _, correct in before) / total
        return min(self.config.min_neighbour_accuracy, own)

    def _neighbours(self, found: NeighboursFound | NeighboursRanked) -> list[Effect]:
        if self.phase != "asking":
            return []
        if isinstance(found, NeighboursRanked):
            ranked = [r for r in found.reports if r.site != self.site]
            return self._try(ranked[: self.config.k])
        config = self.config
        candidates = choose_neighbours(
            found.reports,
            asking=self.site,
            priors=self.priors(),
            signature=self.signature,
            drifted=self.drifted,
            now_s=self.time_s,
            live_window_s=config.live_window_s,
            min_accuracy=self.bar,
            k=config.k,
            rng=self.rng if config.neighbour_choice == "random" else None,
        )
        return self._try(candidates)

    def _try(self, candidates: list[SiteReport]) -> list[Effect]:
        self.candidates = candidates
        names = [r.site for r in self.candidates]
        log = Log("neighbours", f"neighbours for {list(self.drifted)}: {names}", {"sites": names})
        return [log, *self._next_fetch()]

    def _next_fetch(self) -> list[Effect]:
        if not self.candidates:
            return self._give_up("no neighbour left to fetch from", "gave-up")
        self.phase = "fetching"
        source = self.candidates[0]
        return [FetchPart(source, self.classes_from(source))]

    def classes_from(self, source: SiteReport) -> tuple[int, ...]:
        """The wanted classes and those this site never trained on, that the source has
        trained on (its report counts its samples), and the drifted ones whatever it says.
        A class emerging at a drift shows only partly in the batch or two before the
        detector fires, and this site's rows of a class it never saw are untrained, so a
        neighbour's can only help. A row the source never trained carries nothing a merge
        could use, only bytes (and `replace` would overwrite a good row with it); when the
        report does not count (the registry keeps no per-class counts) the source leaves
        those rows out itself (`messages.classes_to_give`)."""
        never = {c for c in range(self.num_classes) if self.class_samples[c] == 0}
        wanted = sorted(set(self.wanted_classes()) | never)
        known = source.class_samples
        if not known:
            return tuple(wanted)
        return tuple(c for c in wanted if c in self.drifted or (c < len(known) and known[c] > 0))

    def wanted_classes(self) -> tuple[int, ...]:
        """The drifted classes and the others the site sees since the drift (the drift
        window): rows trained side by side in the neighbour's model fit together better
        than the drifted rows alone. Not the whole priors window: at detection it still
        holds the classes that just went away, rows the merge would not use."""
        seen, _ = _tally(list(self._scored)[-self.config.drift_window :], self.num_classes)
        share = seen / max(seen.sum(), 1)
        now = [c for c in range(self.num_classes) if share[c] >= self.config.min_class_share]
        return tuple(sorted(set(now) | set(self.drifted)))

    def _fetch_failed(self, event: FetchFailed) -> list[Effect]:
        if self.phase != "fetching" or not self.candidates:
            return []
        if self.candidates[0].site == event.source:
            self.candidates.pop(0)
        log = Log(
            "fetch-failed",
            f"fetch from {event.source} failed: {event.reason}; next",
            {"source": event.source},
        )
        return [log, *self._next_fetch()]

    def _part(self, part: ModelPart) -> list[Effect]:
        if self.phase != "fetching":
            return [Log("refused", f"unasked-for part from {part.source}; kept the model")]
        try:
            check_part(part, self.signature, self.shapes, self.num_classes)
        except PartRefused as e:
            if self.candidates and self.candidates[0].site == part.source:
                self.candidates.pop(0)
            refused = Log(
                "refused",
                f"refused part from {part.source}: {e}; kept the model",
                {"source": part.source},
            )
            return [refused, *self._next_fetch()]
        self.phase = "training"
        self.cooldown_left = self.config.cooldown
        self.drift_flag = False
        self.candidates = []
        self.transfers += 1
        self.version += 1
        return [
            MergePart(part),
            RecordLineage(
                site=self.site,
                version=self.version,
                source=part.source,
                source_version=part.source_version,
                kind=part.kind,
                classes=part.classes,
                policy=self.config.merge,
                time_s=self.time_s,
            ),
            Log("merged", f"merged {part.describe()} by {self.config.merge}"),
        ]

    def _give_up(self, reason: str, event: str) -> list[Effect]:
        self.phase = "training"
        self.cooldown_left = self.config.cooldown
        self.candidates = []
        return [Log(event, f"{reason}; training alone")]


def _tally(
    scored: Sequence[tuple[np.ndarray, np.ndarray]], num_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Samples and errors per class over scored batches."""
    seen = np.zeros(num_classes)
    wrong = np.zeros(num_classes)
    for labels, correct in scored:
        np.add.at(seen, labels, 1)
        np.add.at(wrong, labels, ~correct)
    return seen, wrong
