"""What runs report as they go: one typed model per kind of event.

Three logs hold them, one JSON object a line (runlog.py writes and reads them):
- a site's `log.jsonl` (`atoll site run`): its ranks' events, relayed by the site's
  parent process, and `failed` when the site stops on an error; a cartel site's own
  events (drift, neighbours, transfers) besides its steps and evaluations;
- a geo job's `log.jsonl` (`atoll train --sites N`): what the launcher did to its sites;
- a simulation's `log.jsonl` (`atoll sim`): the accuracy timeline, in virtual time.
`error` and `rank_stats` go only from a rank to its site's parent, and `progress` only
from the launcher to its caller; neither is written to a log.

Every event names its kind in `kind`, the field readers dispatch on. Field names are
those the logs have always had: a log written before these models parses with them.
Fields a reader does not know are ignored, so an older Atoll reads a newer log.
"""

from collections.abc import Iterable
from typing import Annotated, Any, Literal, TypeGuard, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)


class EventModel(BaseModel):
    """What every event is."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    # Each event narrows `kind` to a Literal of its own. Declared here, it comes first in
    # the JSON, before the fields the groups below declare.
    kind: str


class FromRank(EventModel):
    """What one rank of a site reports."""

    time: float
    rank: int


class AtStep(EventModel):
    """What a site reports as its training reaches `step`: clocks (a cartel site: batches)
    done."""

    time: float
    step: int


# -- a site's ranks ------------------------------------------------------------------


class RankStarted(FromRank):
    kind: Literal["rank_started"] = "rank_started"
    pid: int


class GeoJoined(FromRank):
    """A rank's shards reached their mirrors; `clock` is where the site goes on from."""

    kind: Literal["geo_joined"] = "geo_joined"
    clock: int


class TrainingStarted(AtStep):
    kind: Literal["started"] = "started"
    # `step`: 0, or the step a resumed run goes on from
    total_steps: int
    params: int
    # The site's own account of its data and model, for its agent to report.
    samples: int | None = None
    class_counts: list[int] | None = None
    model_signature: str | None = None
    bsp_bytes_per_clock: int | None = None  # in a geo job: what BSP would send per clock


class StepDone(AtStep):
    kind: Literal["step"] = "step"
    loss: float  # of worker 0's batch
    epoch: int


class CheckpointSaved(AtStep):
    kind: Literal["checkpoint"] = "checkpoint"


class Evaluated(AtStep):
    kind: Literal["eval"] = "eval"
    test_accuracy: float
    test_loss: float
    samples: int = 0  # test samples evaluated on (absent in the oldest logs)


# Counters that only some geo policies keep: left out of the JSON when a policy lacks them.
_POLICY_COUNTERS = frozenset(
    {
        "threshold",
        "sent_elements",
        "applied_elements",
        "pending_accumulator_l1",
        "lookaheads",
        "link_share",
        "congested_clocks",
        "mean_catch_up_clocks",
        "mean_undelivered_mirror_clocks",
        "broadcast_elements",
        "pending_aggregate_l1",
        "rounds",
    }
)


class GeoStats(FromRank):
    """One shard's geo policy and WAN links, cumulative since this run of the site began
    (a restarted site starts counting again)."""

    kind: Literal["geo"] = "geo"
    shard: int
    policy: str
    clock: int
    stall_s: float = Field(description="time this shard's policy held the site's clocks")
    bytes_sent: int
    links: dict[str, int] = Field(description="'site->peer' -> bytes sent on that link")
    reconnects: int = 0
    decode_errors: int = 0
    protocol_errors: int = 0
    last_protocol_error: str | None = None
    unacknowledged_at_close: str | None = None
    # asp
    threshold: float | None = None
    sent_elements: int | None = None
    applied_elements: int | None = None
    pending_accumulator_l1: float | None = None
    lookaheads: int | None = None
    mean_undelivered_mirror_clocks: float | None = None
    link_share: float | None = Field(None, description="share of elements sent a clock, now")
    congested_clocks: int | None = None
    label_skew: float | None = Field(
        None, description="the sites' label skew, measured at the start (None: not yet, or unknown)"
    )
    staleness: int | None = Field(None, description="the mirror clock's bound DS, now")
    mean_catch_up_clocks: float | None = None  # tracking asp
    broadcast_elements: int | None = None  # sharded asp: elements its owner broadcast
    pending_aggregate_l1: float | None = None  # sharded asp: contributions not yet broadcast
    # bsp, lan, fedavg, diloco
    rounds: int | None = None

    @model_serializer(mode="wrap")
    def _omit_counters_the_policy_lacks(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None or k not in _POLICY_COUNTERS}


class TrainingFinished(AtStep):
    kind: Literal["finished"] = "finished"
    stopped: bool  # stopped early on request (with a checkpoint), not trained to the end
    train_s: float = 0.0  # seconds of clocks, without checkpoints and evaluations
    steady_steps: int = 0  # clocks after the warm-up, over which steady_step_s is measured
    steady_step_s: float | None = None
    test_accuracy: float | None = None  # on the whole test set; None when stopped
    test_loss: float | None = None


class TrainingFailed(EventModel):
    kind: Literal["failed"] = "failed"
    time: float
    message: str


class RankFailed(FromRank):
    kind: Literal["error"] = "error"
    message: str
    traceback: str


class RankStats(FromRank):
    kind: Literal["rank_stats"] = "rank_stats"
    barrier_wait_s: float
    compute_s: float
    exchange_s: float
    exchange: str  # what carried the tensors: "shared memory" or "process group"


# -- the local launcher of a geo job ---------------------------------------------------


class OfSite(EventModel):
    """What the launcher did to, or saw of, one of its sites."""

    time: float
    site: str


class SiteLaunched(OfSite):
    kind: Literal["site_started"] = "site_started"
    pid: int
    resume: bool


class SiteDied(OfSite):
    kind: Literal["site_died"] = "site_died"
    how: str
    restarting: bool


class SiteAbandoned(OfSite):
    """Still rejoining when every other site had finished: the job ends without it."""

    kind: Literal["site_abandoned"] = "site_abandoned"


class SiteProgressed(OfSite):
    kind: Literal["progress"] = "progress"
    clock: int
    accuracy: float | None
    wan_bytes: int
    stall_s: float


# -- a device site (the device tier) ---------------------------------------------------------


class DeviceRoundDone(EventModel):
    """A device site closed a round: what its devices sent, and what crossed the WAN."""

    kind: Literal["device_round"] = "device_round"
    time: float
    round: int
    devices: int  # asked to train
    replied: int  # replies checked and aggregated
    refused: int  # replies that failed their checks (the log names each device and why)
    late: int  # replies to earlier rounds, dropped
    examples: int | None = None  # `num-examples` summed over the aggregated replies
    silent: list[int] = Field(default_factory=list)  # node ids that had not replied
    train_loss: float | None = None
    device_accuracy: float | None = None  # mean over the devices, by their test examples
    device_loss: float | None = None
    round_s: float  # devices' training round, start to aggregate
    geo_wait_s: float = 0.0  # then waiting on the geo tier
    wan_bytes: int = 0  # sent by this site since its start


# -- a cartel site (per-site model, collaborative transfer) ---------------------------------

CartelHappening = Literal[
    "drift",  # its drift detector fired
    "neighbours",  # the registry named the sites to fetch from
    "refused",  # it would not merge a part (signature, shape, NaN or infinity): model kept
    # A neighbour declined (not good on the drifted classes), did not answer in time, or
    # its link failed: the next one.
    "fetch-failed",
    "gave-up",  # no neighbour left: training alone
    "registry-down",  # a report or query got no answer: training alone, catching up later
    "registry-up",
]


class CartelNoted(AtStep):
    """What a cartel site decided or met, in the words of its log line."""

    kind: Literal["cartel"] = "cartel"
    happening: CartelHappening
    message: str
    sites: list[str] = Field(default_factory=list)  # the neighbours, or the one concerned
    classes: list[int] = Field(default_factory=list)  # the drifted classes
    detector: str | None = None


class CartelTransferred(AtStep):
    """A part fetched from a neighbour and merged into the site's model."""

    kind: Literal["cartel_transfer"] = "cartel_transfer"
    source: str
    source_version: int
    part: str  # rows (logistic regression) or head (the CNN's classifier)
    classes: list[int]
    merge: str
    bytes: int  # the part as it crossed the link
    version: int  # the site's model version after the merge


# -- the simulator (virtual time) ----------------------------------------------------------


class SimSiteDone(EventModel):
    kind: Literal["site_done"] = "site_done"
    site: str
    time_s: float


class SimDiverged(EventModel):
    """A site's training diverged (loss blew up or is not a number): the run stops."""

    kind: Literal["diverged"] = "diverged"
    site: str
    clock: int
    loss: float
    reason: str


class TimelinePoint(EventModel):
    """Every site has reported its accuracy at `clock`."""

    kind: Literal["point"] = "point"
    clock: int
    time_s: float
    mean_accuracy: float
    min_accuracy: float
    wan_bytes: int
    links: dict[str, int]
    stall_s: float  # mean over the sites


# What the ranks report that the site's log keeps.
RankEvent = (
    RankStarted
    | GeoJoined
    | TrainingStarted
    | StepDone
    | CheckpointSaved
    | Evaluated
    | GeoStats
    | TrainingFinished
    | DeviceRoundDone
)
CartelEvent = CartelNoted | CartelTransferred
SiteEvent = RankEvent | CartelEvent | TrainingFailed  # a site's log
RankMessage = RankEvent | RankFailed | RankStats  # from a rank to its site's parent
LaunchEvent = SiteLaunched | SiteDied | SiteAbandoned | SiteProgressed
SimEvent = SimSiteDone | SimDiverged | TimelinePoint
RunEvent = SiteEvent | RankFailed | RankStats | LaunchEvent | SimEvent

_ANY_EVENT: TypeAdapter[RunEvent] = TypeAdapter(Annotated[RunEvent, Field(discriminator="kind")])
E = TypeVar("E", bound=EventModel)


class MalformedEvent(ValueError):
    """A log line that is no event this version knows; the message says why."""


def parse_event(line: str | bytes) -> RunEvent:
    """One log line as its event; raises MalformedEvent for anything else."""
    try:
        return _ANY_EVENT.validate_json(line)
    except ValidationError as e:
        problem = e.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise MalformedEvent(f"{where or 'line'}: {problem['msg']}") from e


def of_kind(events: Iterable[RunEvent], kind: type[E]) -> list[E]:
    """The events of one kind, in order."""
    return [e for e in events if isinstance(e, kind)]


_SITE_EVENTS: tuple[type[EventModel], ...] = get_args(SiteEvent)


def is_site_event(event: RunEvent) -> TypeGuard[SiteEvent]:
    """An event a site's log holds (rather than a launcher's or a simulation's)."""
    return isinstance(event, _SITE_EVENTS)
