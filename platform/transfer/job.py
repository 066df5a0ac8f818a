"""A cartel job: per-site online models that help each other on drift (no shared replica).

`CartelJob` is what an operator submits to the control plane; `plan_cartel_sites` turns
it into one `CartelSiteJob` per site, which the site's edge agent completes with its own
paths (its certificate for the site-to-site links, its registry token) and runs. Plain
pydantic: the control plane reads these without loading PyTorch.
"""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from atoll.platform.core.errors import AtollError
from atoll.platform.data.names import DatasetName
from atoll.platform.data.schema import SCHEMAS, DataSchema, SiteData
from atoll.platform.transfer.config import CartelConfig

CartelModel = Literal["logreg", "cnn"]
Scenario = Literal["class-emergence", "prior-shift", "recurring"]
SiteName = str
# A real site's data arrives in time order, so `stored` (the order its files keep) is what
# online learning on it means; `shuffled` (the job's seed) makes an unordered dump i.i.d.
StreamOrder = Literal["stored", "shuffled"]


class CartelJob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["cartel"] = "cartel"
    sites: tuple[SiteName, ...] = Field(
        min_length=2, description="the edge agents (site names) that run it, each its own model"
    )
    # `emulated`: each site's stream is drawn from one public dataset (`dataset`) by the
    # scenario, for demos and benchmarks. `site`: each site streams the data its own
    # site.yaml names, which must have the job's schema; `scenario` and `streams` are unused.
    data: Literal["emulated", "site"] = "emulated"
    data_schema: DataSchema | None = Field(
        None, description="what the sites' data must be (data: site); default `dataset`'s"
    )
    order: StreamOrder = Field(
        "stored", description="data: site: the training set in its stored order, or shuffled"
    )
    streams: dict[SiteName, int] | None = Field(
        None,
        description="site -> the scenario stream it sees (stream i mostly sees classes "
        "2i..2i+3; streams 1 and 2 drift); default: the sites in order. Two sites on one "
        "stream are twins: each is a good neighbour for the other",
    )
    scenario: Scenario = "class-emergence"
    dataset: DatasetName = "digits"
    data_dir: Path | None = None
    model: CartelModel = "logreg"
    batches: int = Field(150, ge=30, description="batches each site trains on (its clocks)")
    batch_size: int = Field(10, ge=1)
    batch_interval_s: float = Field(
        0.1, ge=0, description="a batch arrives at each site every this many seconds"
    )
    eval_every: int = Field(5, ge=1, description="batches between accuracy reports")
    fetch_timeout_s: float = Field(
        3.0, gt=0, description="a neighbour silent this long is given up for the next"
    )
    checkpoint_every: int = Field(
        20, ge=1, description="batches between a site's checkpoints (also one on stop)"
    )
    seed: int = 0
    cartel: CartelConfig = CartelConfig()

    @model_validator(mode="after")
    def _check_sites(self) -> "CartelJob":
        if len(set(self.sites)) != len(self.sites):
            raise ValueError(f"sites {list(self.sites)} repeat a name")
        if self.data == "site" and self.streams is not None:
            raise ValueError("streams are scenario streams: with data: site, leave them out")
        if self.streams is not None:
            unknown = sorted(set(self.streams) - set(self.sites))
            missing = sorted(set(self.sites) - set(self.streams))
            if unknown or missing:
                raise ValueError(
                    f"streams must name every site once (unknown {unknown}, missing {missing})"
                )
            if any(s < 0 for s in self.streams.values()):
                raise ValueError("a stream index is >= 0")
        return self

    @property
    def clocks(self) -> int:
        """What the control plane counts a site's progress in: its batches."""
        return self.batches

    @property
    def label(self) -> str:
        source = f"own data, {self.order}" if self.data == "site" else self.scenario
        return f"cartel ({source}, {self.model}, merge {self.cartel.merge})"

    @property
    def expected_schema(self) -> DataSchema:
        return self.data_schema or SCHEMAS[self.dataset]

    def stream_of(self, site: str) -> int:
        return self.streams[site] if self.streams is not None else self.sites.index(site)

    @property
    def stream_count(self) -> int:
        """The scenario's streams: enough for the highest index any site takes."""
        return max(self.stream_of(s) for s in self.sites) + 1


class CartelSiteJob(BaseModel):
    """One site's part, as `atoll site run` reads it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["cartel"] = "cartel"
    job_name: str
    site: SiteName
    job: CartelJob
    endpoints: dict[SiteName, str] = Field(
        description="site -> the wss:// URL of its site-to-site link (this site's included)"
    )
    # Filled in by the site's agent: its identity for the links, and its registry access.
    tls_dir: Path | None = Field(None, description="ca.pem and <site>.pem/<site>.key")
    crl_file: Path | None = None
    secret_file: Path | None = Field(None, description="a shared secret (local runs only)")
    registry_url: str | None = Field(None, description="None: the site trains alone")
    registry_token_file: Path | None = None
    registry_site_id: str | None = Field(None, description="None: looked up by name")
    data_dir: Path | None = None
    data: SiteData | None = Field(None, description="the site's own data (data: site)")
    threads: int | None = Field(None, ge=1, description="torch threads; default torch's")

    @property
    def stream(self) -> int:
        return self.job.stream_of(self.site)

    @property
    def seed(self) -> int:
        """Its own batches: twins on one stream draw different samples."""
        return self.job.seed * 1_000_003 + self.job.sites.index(self.site)

    def own_data(self) -> SiteData:
        """The data this site streams in a `data: site` job, checked against the job."""
        if self.data is None:
            raise AtollError(
                f"{self.site}: the job streams each site's own data, and this site's "
                "site.yaml names none (add data:)"
            )
        schema, expected = self.data.resolved_schema, self.job.expected_schema
        if schema != expected:
            raise AtollError(
                f"{self.site}: its data ({self.data.path}) is {schema.describe()}, "
                f"not the job's schema ({expected.describe()})"
            )
        return self.data

    @classmethod
    def load(cls, path: Path) -> "CartelSiteJob":
        return cls.model_validate_json(path.read_text())


def plan_cartel_sites(
    name: str, job: CartelJob, listen: dict[str, tuple[str, int]]
) -> dict[str, CartelSiteJob]:
    """`listen`: site -> (host, port) its agent advertised for site-to-site links."""
    missing = [s for s in job.sites if s not in listen]
    if missing:
        raise ValueError(f"no link address for {missing}")
    endpoints = {s: f"wss://{listen[s][0]}:{listen[s][1]}" for s in job.sites}
    return {
        s: CartelSiteJob(job_name=name, site=s, job=job, endpoints=endpoints) for s in job.sites
    }
