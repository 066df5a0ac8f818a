"""Request and response bodies of the control plane's API. A job is submitted as a
`GeoJob`, the one job-spec format that `atoll train --sites`, `atoll sim` and the
benchmarks also run, or as a `CartelJob` (`kind: cartel`); every field is described in
the OpenAPI schema."""

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import PydanticCustomError

from atoll.platform.bus.messages import CommandKind, DeviceTierReport
from atoll.platform.control.states import CommandState, JobState, SiteState, SiteStatus
from atoll.platform.data.schema import DataReport
from atoll.platform.geo.job import GeoJob
from atoll.platform.service.schemas import Readiness as ServiceReadiness
from atoll.platform.transfer.job import CartelJob

_KINDS: dict[str, type[GeoJob] | type[CartelJob]] = {"geo": GeoJob, "cartel": CartelJob}


def _by_kind(spec: Any, _handler: ValidatorFunctionWrapHandler) -> GeoJob | CartelJob:
    """Validate as the kind the spec names; one without is a geo job (every spec before
    cartel jobs). Problems name the spec's own fields (`spec.geo.threshold`), as before."""
    if isinstance(spec, GeoJob | CartelJob):
        return spec
    kind = spec.get("kind", "geo") if isinstance(spec, dict) else None
    model = _KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise PydanticCustomError("job_kind", "a job's kind is geo (the default) or cartel")
    return model.model_validate(spec)


# What an operator submits: a geo job (one model, replicas kept in sync across sites) or a
# cartel job (a model per site; sites help each other on drift).
JobSpec = Annotated[GeoJob | CartelJob, WrapValidator(_by_kind)]
_SPEC: TypeAdapter[GeoJob | CartelJob] = TypeAdapter(JobSpec)


def parse_spec(stored: dict[str, Any]) -> GeoJob | CartelJob:
    return _SPEC.validate_python(stored)


JobName = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: JobName | None = Field(None, description="For people; default job-<id prefix>.")
    spec: JobSpec = Field(
        description="What to train and how. A geo job (`kind: geo`, the default): dataset, "
        "partition, model, topology (whose site names are the edge agents it runs on), geo "
        "policy and its parameters, clocks. A cartel job (`kind: cartel`): the sites, each "
        "training its own model on its stream, the scenario, and Cartel's options."
    )


class JobSiteOut(BaseModel):
    site: str
    state: SiteState = Field(description="pending, assigned, starting, running, finished, ...")
    online: bool = Field(description="its agent's heartbeat is live")
    clock: int
    total_clocks: int | None
    accuracy: float | None = Field(description="latest periodic test accuracy")
    final_accuracy: float | None = Field(description="on the whole test set, at the end")
    wan_bytes: int = Field(description="bytes the site sent to the others")
    stall_s: float = Field(description="seconds the site waited on the others")
    restarts: int = Field(description="times it resumed from a checkpoint")
    samples: int | None = Field(description="training samples at the site")
    stop_reason: str | None
    message: str | None


class JobOut(BaseModel):
    id: str
    name: str
    state: JobState
    message: str | None = Field(description="why it waits, or how it ended")
    spec: JobSpec
    sites: list[JobSiteOut]
    params: int | None = Field(description="model parameters (known once planned)")
    wan_bytes: int = Field(description="bytes sent between sites so far")
    bsp_wan_bytes: int | None = Field(
        description="what BSP would have sent for the clocks done so far (the bsp policy's "
        "messages for this model, framed as the links frame them)"
    )
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class JobPage(BaseModel):
    jobs: list[JobOut]
    next_before: datetime | None = Field(description="pass as `before` for the next page")
    total: int = Field(description="how many jobs match, on every page")


class SiteOut(BaseModel):
    name: str
    state: SiteStatus = Field(description="what operators decided")
    online: bool
    agent_state: str | None = Field(description="idle, running, draining or removed, as reported")
    region: str | None
    registry_id: str | None
    geo_endpoint: str | None = Field(description="host:port of shard 0's WAN link")
    geo_ports: int
    job: str | None = Field(description="the job it is running, if any")
    version: str | None
    duplicates: int = Field(description="commands delivered to it again and not re-applied")
    joined: bool = Field(description="its agent has reported at least once")
    data: DataReport | None = Field(
        None, description="its own data as it reported it: schema, samples, label histogram"
    )
    devices: DeviceTierReport | None = Field(
        None, description="its device tier (Flower SuperLink, latest device rounds), if enabled"
    )
    first_seen_at: datetime = Field(description="when it joined, or was declared")
    last_seen_at: datetime


class SiteList(BaseModel):
    sites: list[SiteOut]
    total: int = Field(description="how many sites match, on every page")


class SiteDeclare(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[
        str,
        StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$"),
    ] = Field(description="The name its agent will join as (its site.yaml `name`).")
    region: Annotated[str, StringConstraints(min_length=1, max_length=64)] | None = Field(
        None, description="Where it is, until its agent reports its own."
    )


class CommandOut(BaseModel):
    id: str
    site: str
    job_id: str | None
    kind: CommandKind
    state: CommandState = Field(description="issued, applied, refused, ignored or superseded")
    detail: str | None
    publish_count: int = Field(description="times it was put on the bus")
    created_at: datetime
    applied_at: datetime | None


class CommandList(BaseModel):
    commands: list[CommandOut]


class Sample(BaseModel):
    id: int = Field(description="increasing; pass the last as `after` to read on")
    site: str
    time: float = Field(description="when the site logged it, epoch seconds")
    kind: str = Field(description="step, eval, geo or end")
    clock: int
    loss: float | None
    accuracy: float | None
    wan_bytes: int | None
    stall_s: float | None


class SamplePage(BaseModel):
    samples: list[Sample]
    next_after: int


class Readiness(ServiceReadiness):
    redis: str = Field(description="ok, or why not")


class EnrolTokenOut(BaseModel):
    site: str
    token: str = Field(description="One-time: give it to the site's agent (ATOLL_ENROL_TOKEN).")


class EnrolRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=256, description="The site's enrolment token.")
    csr: str = Field(
        min_length=1,
        max_length=16_384,
        description="A PEM certificate signing request for the key the site made itself.",
    )
    hosts: list[Annotated[str, StringConstraints(min_length=1, max_length=253)]] = Field(
        [], max_length=8, description="Host names its geo links are reached at (optional)."
    )


class EnrolOut(BaseModel):
    site: str
    certificate: str = Field(description="PEM: the site's certificate, for its own key.")
    ca: str = Field(description="PEM: the federation's CA, which every site trusts.")
    crl: str = Field(description="PEM: the CA's revocation list, as of now.")
    command_key: str = Field(description="PEM: the public key the control plane signs with.")
    redis_user: str | None = Field(description="The site's own Redis user (None: not in use).")
    redis_password: str | None = Field(description="Its password, shown only now.")


class RevokeOut(BaseModel):
    site: str
    certificates: int = Field(description="Certificates of the site revoked now.")
