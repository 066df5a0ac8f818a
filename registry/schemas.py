"""What goes over the wire: request and response bodies of the registry's API.

Shared by the service and its client. Request bodies reject unknown fields;
every field carries a description, which the OpenAPI schema shows.
"""

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, StringConstraints

MAX_INT = 2**53 - 1  # exact in every JSON client (JavaScript's numbers), and fits a BIGINT

# Numbers and flags in request bodies are what JSON says they are: `false` is not 0
# and 1 is not `true`. (Query parameters arrive as text and stay lax.)
Float = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Bool = Annotated[bool, Strict()]


def _integral(value: object) -> object:
    # JSON Schema counts 3.0 as an integer; JSON does not know the difference.
    return int(value) if isinstance(value, float) and value.is_integer() else value


# JSON integers in a range: 3 and 3.0, never `true` or "3". The bounds go before the
# validator, or pydantic cannot put them in the JSON schema.
Count = Annotated[int, Strict(), Field(ge=0, le=MAX_INT), BeforeValidator(_integral)]
Small = Annotated[int, Strict(), Field(ge=0, le=1_000_000), BeforeValidator(_integral)]
NeighbourCount = Annotated[int, Strict(), Field(ge=1, le=100_000), BeforeValidator(_integral)]


Name = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$"),
]
Signature = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9:._+/-]*$"),
]
Version = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"),
]
# Printable text without control characters (PostgreSQL refuses NUL in text).
LabelKey = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$"),
]
LabelValue = Annotated[str, StringConstraints(max_length=256, pattern=r"^[^\x00-\x1f\x7f]*$")]
Uri = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=2048, pattern=r"^[A-Za-z][A-Za-z0-9+.-]*://[^\s\x00-\x1f\x7f]+$"
    ),
]
Checksum = Annotated[
    str,
    StringConstraints(
        pattern=r"^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128}|blake2b:[0-9a-f]{128})$"
    ),
]
Prior = Annotated[Float, Field(ge=0)]
Priors = Annotated[
    list[Prior],
    Field(
        min_length=1,
        description="Label histogram: counts or probabilities per class, non-negative, finite, "
        "not all zero. Stored normalised to sum to 1.",
        # "not all zero", said in JSON Schema, so that generated clients and fuzzers know it.
        json_schema_extra={"contains": {"type": "number", "exclusiveMinimum": 0}},
    ),
]
Labels = Annotated[
    dict[LabelKey, LabelValue],
    Field(
        max_length=32,
        description="Free-form key/value pairs, at most 32.",
        # Keys that miss the key pattern are invalid, not merely unconstrained.
        json_schema_extra={"additionalProperties": False},
    ),
]
SiteStatus = Literal["live", "stale", "deregistered"]
_NEXT = "Pass as `cursor` for the next page; null at the end."


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Capabilities(Request):
    gpus: Small | None = Field(None, description="GPUs at the site")
    workers: Small | None = Field(None, description="worker processes the site can run")
    cpus: Small | None = Field(None, description="CPU cores")
    memory_gb: Annotated[Float, Field(ge=0, le=1e9)] | None = Field(
        None, description="memory available to training, in GB"
    )


class SiteCreate(Request):
    name: Name = Field(description="Unique among registered sites, e.g. eu-west-hospital-3.")
    region: Name = Field(description="Where the site is, e.g. eu-west-1.")
    endpoint: Uri | None = Field(None, description="Where the site's edge agent listens.")
    labels: Labels = {}
    capabilities: Capabilities = Field(
        Capabilities(), description="What the site can run: GPUs, workers, CPUs, memory."
    )


class SiteUpdate(Request):
    region: Name | None = Field(None, description="Omitted or null: unchanged.")
    endpoint: Uri | None = Field(None, description="Omitted: unchanged; null: removed.")
    labels: Labels | None = Field(
        None, description="Replaces all labels; omitted or null: unchanged."
    )
    capabilities: Capabilities | None = Field(
        None, description="Replaces the capabilities; omitted or null: unchanged."
    )


class Site(BaseModel):
    id: UUID = Field(description="Assigned at registration; never changes.")
    name: str = Field(description="Unique among registered sites.")
    region: str = Field(description="Where the site is.")
    endpoint: str | None = Field(description="Where its edge agent listens, if given.")
    labels: dict[str, str] = Field(description="Free-form key/value pairs.")
    capabilities: Capabilities = Field(description="What the site can run.")
    status: SiteStatus = Field(
        description="live: seen (registered, reported or heartbeat) within the liveness window"
    )
    registered_at: datetime = Field(description="When it registered (UTC).")
    updated_at: datetime = Field(description="When its details last changed.")
    last_seen_at: datetime = Field(description="Its last registration, report or heartbeat.")
    deregistered_at: datetime | None = Field(description="When it deregistered, if it has.")
    model_signature: str | None = Field(description="from the latest report")
    model_version: str | None = Field(description="from the latest report")
    reports_total: int = Field(description="reports ever received, including expired ones")


class SiteCreated(Site):
    token: str = Field(description="The site's bearer token. Shown only now: store it.")
    token_id: str = Field(description="Names the token for rotation and revocation.")


class SitePage(BaseModel):
    sites: list[Site] = Field(description="In name order.")
    next_cursor: str | None = Field(description=_NEXT)


class PageQuery(Request):
    limit: int = Field(100, ge=1, le=500, description="Records per page.")
    cursor: str | None = Field(None, max_length=512, description="From the previous page.")


class SiteFilters(PageQuery):
    region: Name | None = Field(None, description="Only sites in this region.")
    status: SiteStatus | None = Field(
        None, description="Only sites in this state; default: live and stale (not deregistered)."
    )
    model_signature: Signature | None = Field(
        None, description="Only sites whose latest report has it."
    )
    name: Name | None = Field(None, description="Only the site with this name.")


class ReportCreate(Request):
    id: UUID | None = Field(
        None,
        description="Chosen by the client so that a retried report is stored once: the same id "
        "with the same content answers 200 with the stored report, with other content 409.",
    )
    class_priors: Priors
    accuracy: Float = Field(ge=0, le=1, description="Recent accuracy, 0..1.")
    samples: Count = Field(description="Samples the priors and accuracy were measured on.")
    model_signature: Signature = Field(description="Architecture hash; neighbours share it.")
    model_version: Version = Field(description="The site's model version, e.g. 7 or 1.4.2.")
    drift: Bool = Field(False, description="The site's drift detector fired.")


class Report(BaseModel):
    id: UUID = Field(description="Chosen by the client, or assigned.")
    site_id: UUID = Field(description="The site that reported.")
    seq: int = Field(description="1, 2, ... per site, in arrival order")
    created_at: datetime = Field(description="When the registry stored it (UTC).")
    class_priors: list[float] = Field(description="normalised to sum to 1")
    accuracy: float = Field(description="Recent accuracy, 0..1.")
    samples: int = Field(description="Samples the priors and accuracy were measured on.")
    model_signature: str = Field(description="Architecture hash.")
    model_version: str = Field(description="The site's model version.")
    drift: bool = Field(description="The site's drift detector fired.")


class ReportPage(BaseModel):
    reports: list[Report] = Field(description="newest first")
    next_cursor: str | None = Field(description=_NEXT)


class NeighbourParams(Request):
    k: int = Field(5, ge=1, le=100_000, description="How many neighbours.")
    window_s: float | None = Field(
        None,
        gt=0,
        le=366 * 86400,
        description="Candidates seen within this many seconds (default: the liveness window).",
    )


class NeighbourQuery(Request):
    class_priors: Priors
    model_signature: Signature = Field(description="Only sites with this signature are ranked.")
    k: NeighbourCount = Field(5, description="How many neighbours to return.")
    exclude: list[UUID] = Field([], max_length=100, description="Sites to leave out.")


class Neighbour(BaseModel):
    site_id: UUID = Field(description="The neighbour.")
    divergence: float = Field(
        description="Jensen-Shannon divergence of class priors, in bits: 0 same, 1 disjoint"
    )
    name: str = Field(description="The neighbour's name.")
    region: str = Field(description="Where it is.")
    endpoint: str | None = Field(description="Where its edge agent listens, to pull its model.")
    model_version: str | None = Field(description="from the site's latest report")
    accuracy: float | None = Field(description="from the site's latest report")
    samples: int | None = Field(description="from the site's latest report")
    drift: bool | None = Field(description="from the site's latest report")
    last_seen_at: datetime = Field(description="Its last registration, report or heartbeat.")


class NeighbourList(BaseModel):
    site_id: UUID | None = Field(description="The site asked about; null for a priors query.")
    model_signature: str = Field(description="Only sites with this signature were ranked.")
    k: int = Field(description="How many neighbours were asked for.")
    candidates: int = Field(description="live sites with the signature that were ranked")
    window_s: float = Field(description="liveness window: seen within this many seconds")
    neighbours: list[Neighbour] = Field(description="nearest first")


class TokenCreate(Request):
    revoke_others: Bool = Field(
        False, description="Revoke every other token of the site in the same step (rotation)."
    )


class TokenInfo(BaseModel):
    id: str = Field(description="Names the token; not the token itself.")
    site_id: UUID = Field(description="The site it belongs to.")
    hint: str = Field(description="the token's first characters, to tell tokens apart")
    created_at: datetime = Field(description="When it was issued.")
    revoked_at: datetime | None = Field(description="When it was revoked, if it was.")
    active: bool = Field(description="Not revoked.")


class TokenCreated(TokenInfo):
    token: str = Field(description="The bearer token. Shown only now: store it.")


class TokenList(BaseModel):
    tokens: list[TokenInfo] = Field(description="Oldest first, revoked ones included.")


class ArtifactCreate(Request):
    id: UUID | None = Field(
        None,
        description="Chosen by the client so that a retry is stored once (as for reports).",
    )
    job: (
        Annotated[str, StringConstraints(max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")]
        | None
    ) = Field(None, description="The training job that produced the model.")
    sites: list[UUID] = Field(
        min_length=1, max_length=1000, description="Sites whose data trained it."
    )
    clock: Count | None = Field(None, description="The training clock it was taken at.")
    checksum: Checksum = Field(description="sha256:<64 hex>, sha512:<128 hex> or blake2b:<128 hex>")
    size_bytes: Count = Field(description="The artifact's size in bytes.")
    uri: Uri = Field(description="Where the artifact is stored, e.g. s3://bucket/key.")
    model_signature: Signature | None = Field(None, description="Its architecture hash.")
    parent: UUID | None = Field(None, description="The artifact this one was trained from.")


class Artifact(BaseModel):
    id: UUID = Field(description="Chosen by the client, or assigned.")
    job: str | None = Field(description="The training job that produced it.")
    sites: list[UUID] = Field(description="Sites whose data trained it, in id order.")
    clock: int | None = Field(description="The training clock it was taken at.")
    checksum: str = Field(description="Algorithm and digest, e.g. sha256:<64 hex>.")
    size_bytes: int = Field(description="Its size in bytes.")
    uri: str = Field(description="Where it is stored.")
    model_signature: str | None = Field(description="Its architecture hash.")
    parent: UUID | None = Field(description="The artifact it was trained from.")
    created_at: datetime = Field(description="When it was recorded (UTC).")
    created_by: str = Field(description='"admin" or the id of the site that recorded it')


class ArtifactPage(BaseModel):
    models: list[Artifact] = Field(description="newest first")
    next_cursor: str | None = Field(description=_NEXT)


class ArtifactFilters(PageQuery):
    job: str | None = Field(
        None,
        max_length=128,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]*$",
        description="Only artifacts of this job.",
    )
    site: UUID | None = Field(None, description="Only artifacts this site's data trained.")


class Lineage(BaseModel):
    model_id: UUID = Field(description="The artifact asked about.")
    ancestors: list[Artifact] = Field(description="parent first, then its parent, up to the root")
