"""What crosses the bus: commands to agents, agents' status and telemetry, heartbeats.

Each message is one pydantic model, sent as JSON in the stream entry's field `m`.
Nothing here imports PyTorch: an agent reads these without loading the runtime.
"""

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from atoll.platform.data.schema import DataReport

FIELD = "m"  # the stream entry field that holds the message

SiteName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]
CommandKind = Literal["start_job", "cancel_job", "drain", "activate", "remove"]
# A site's part in a job. Terminal: finished, failed, cancelled. `stopped` is paused:
# drained or shut down, with a checkpoint, to be resumed.
SiteJobState = Literal["starting", "running", "finished", "failed", "stopped", "cancelled"]
AgentState = Literal["idle", "running", "draining", "removed"]
Outcome = Literal["applied", "refused", "ignored"]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def encode(self) -> dict[str, str]:
        return {FIELD: self.model_dump_json()}

    @classmethod
    def decode(cls, fields: dict[str, str]) -> Self:
        return cls.model_validate_json(fields[FIELD])


JobKind = Literal["geo", "cartel"]


class StartJob(Message):
    job_name: str
    # geo: a replica kept in sync with the other sites (`site_job` is a SiteJob); cartel: the
    # site's own model, helped by its neighbours on drift (a CartelSiteJob).
    kind: JobKind = "geo"
    # The site's SiteJob as JSON. The agent puts its own paths in (its certificate, key,
    # CA and revocation list; data); `atoll site run` validates the rest. No secret: geo
    # links authenticate with each site's own certificate.
    site_job: dict[str, Any]
    own_data: bool = Field(
        False, description="train on the data the site's site.yaml names (it fills `data` in)"
    )
    clocks: int


class Command(Message):
    id: str = Field(description="unique; a command delivered again carries the same id")
    site: SiteName
    kind: CommandKind
    job_id: str | None = None
    issued_at: float
    start: StartJob | None = None  # for start_job
    # The control plane's Ed25519 signature (platform/bus/signing.py) over the rest, made
    # when it puts the command on the bus (`signed_at`, again at each retry).
    signed_at: float | None = None
    signature: str | None = None


class AppliedCommand(Message):
    id: str
    kind: CommandKind
    outcome: Outcome
    detail: str = ""
    at: float


class JobReport(Message):
    """A site's part in a job, as its agent sees it."""

    job_id: str
    state: SiteJobState
    clock: int = 0
    total_clocks: int | None = None
    accuracy: float | None = None  # the latest periodic evaluation
    final_accuracy: float | None = None  # on the whole test set, at the end
    wan_bytes: int = 0
    stall_s: float = 0.0
    restarts: int = 0
    stop_reason: str | None = None  # drain, shutdown, cancel
    message: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    # The site's own account, once it has started: nothing central computes these.
    samples: int | None = None
    params: int | None = None
    bsp_bytes_per_clock: int | None = None


class DeviceRound(Message):
    """One round of the site's device tier (Flower devices), as its ServerApp logged it."""

    round: int
    time: float
    devices: int = Field(description="asked to train")
    replied: int = Field(description="replies checked and aggregated")
    refused: int = Field(description="replies that failed their checks")
    dropped: int = Field(description="devices that had not replied by the round's deadline")
    late: int = Field(0, description="replies to earlier rounds, dropped")
    examples: int | None = Field(None, description="`num-examples` of the aggregated replies")
    seconds: float = Field(description="the devices' round, start to aggregate")
    accuracy: float | None = Field(None, description="the devices' own, by test examples")


class DeviceTierReport(Message):
    """A site's device tier: its Flower SuperLink, and the latest rounds of its run."""

    superlink: str = Field(description="host:port devices dial")
    up: bool = Field(description="the SuperLink and its SuperExec are running")
    restarts: int = 0
    run_dir: str | None = Field(None, description="where the current run writes, on the site")
    finished: bool = False
    rounds: list[DeviceRound] = Field(default_factory=list, description="the newest, oldest first")


class AgentStatus(Message):
    """Everything an agent knows that the control plane keeps: a full snapshot each time,
    so that a lost, late or repeated report changes nothing once a newer one arrives."""

    site: SiteName
    incarnation: str = Field(description="random per agent process")
    seq: int = Field(description="increases with each report of one incarnation")
    time: float
    state: AgentState
    region: str
    registry_id: str | None = None
    geo_host: str
    geo_port: int
    geo_ports: int = Field(description="consecutive ports from geo_port: the most shards")
    version: str
    data: DataReport | None = Field(None, description="the data its site.yaml names, if any")
    jobs: list[JobReport] = []
    applied: list[AppliedCommand] = []
    duplicates: int = Field(0, description="deliveries of commands it had already applied")
    devices: DeviceTierReport | None = Field(None, description="its device tier, if enabled")


class Telemetry(Message):
    site: str
    job_id: str
    time: float
    kind: Literal["step", "eval", "geo", "end"]
    clock: int
    loss: float | None = None
    accuracy: float | None = None
    wan_bytes: int | None = None
    stall_s: float | None = None


class Beat(Message):
    """The value of a site's liveness key."""

    time: float
    state: AgentState
    incarnation: str
