"""What the edge agent's core (core.py) takes in, one at a time, and the effects it asks
the agent to carry out, in order."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from atoll.platform.bus.messages import Command, StartJob, Telemetry
from atoll.platform.core.events import RunEvent


@dataclass(frozen=True)
class Moment:
    mono: float  # time.monotonic(): for deadlines and throttles
    wall: float  # time.time(): for timestamps others read


@dataclass(frozen=True)
class OfJob:
    """An input or an effect that concerns one job: its site, its files."""

    job_id: str


# -- inputs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recover:
    """The agent has started: every job's log so far, by job id."""

    logs: Mapping[str, Sequence[RunEvent]]
    at: Moment


@dataclass(frozen=True)
class CommandArrived:
    entry_id: str  # the bus entry, to acknowledge
    command: Command | None  # None: unreadable
    at: Moment


@dataclass(frozen=True)
class Launched(OfJob):
    """A Launch was carried out: the site runs as `pid`."""

    pid: int


@dataclass(frozen=True)
class SiteLogged(OfJob):
    event: RunEvent
    at: Moment


@dataclass(frozen=True)
class SiteEnded(OfJob):
    code: int
    last_error: str | None  # the end of what it printed on stderr


@dataclass(frozen=True)
class Tick:
    at: Moment


@dataclass(frozen=True)
class SignalReceived:
    name: str  # SIGTERM, SIGINT
    at: Moment


@dataclass(frozen=True)
class RegistryJoined:
    site_id: str


@dataclass(frozen=True)
class Abort:
    """The agent is going down on an error: every site is killed."""

    at: Moment


Input = (
    Recover
    | CommandArrived
    | Launched
    | SiteLogged
    | SiteEnded
    | Tick
    | SignalReceived
    | RegistryJoined
    | Abort
)


# -- effects -----------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteJobFiles(OfJob):
    start: StartJob


@dataclass(frozen=True)
class Launch(OfJob):
    """Start the job's site (resume: from its checkpoint); then report `Launched`."""

    resume: bool


@dataclass(frozen=True)
class Stop(OfJob):
    """SIGTERM: the site finishes its clock, checkpoints and exits."""


@dataclass(frozen=True)
class Kill(OfJob):
    pass


@dataclass(frozen=True)
class SendTelemetry:
    sample: Telemetry


@dataclass(frozen=True)
class ReportToRegistry:
    class_priors: list[float]
    accuracy: float
    samples: int
    model_signature: str
    model_version: str


@dataclass(frozen=True)
class Ack:
    entry_id: str


@dataclass(frozen=True)
class SaveState:
    """Write agent.json (the jobs, draining/removed, the registry id)."""


@dataclass(frozen=True)
class SaveLedger:
    pass


@dataclass(frozen=True)
class Note:
    level: Literal["info", "warning"]
    message: str


Effect = (
    WriteJobFiles
    | Launch
    | Stop
    | Kill
    | SendTelemetry
    | ReportToRegistry
    | Ack
    | SaveState
    | SaveLedger
    | Note
)
