"""What a site trains, and how: one validated, serialisable spec per run."""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from atoll.platform.data.schema import DataShare, SiteData
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.model.optim import OptimizerSpec
from atoll.platform.site.device import DeviceChoice

# Changing one of these between a run and its resume would silently train a
# different model, so resume refuses.
RESUME_INVARIANT = (
    "dataset",
    "model",
    "workers",
    "batch_size",
    "optimizer",
    "seed",
    "data",
    "share",
)


class SiteGeo(BaseModel):
    """How a site keeps its replica in sync with the other sites of a geo job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    site: str
    sites: tuple[str, ...] = Field(description="every site of the job, in index order")
    policy: GeoSpec
    endpoints: dict[str, tuple[str, ...]] = Field(
        description="site -> WebSocket URL of each of its shards (shard s mirrors shard s)"
    )
    links: dict[str, tuple[float, float]] = Field(
        description="peer -> (one-way latency s, bandwidth bit/s) of this site's link to it"
    )
    secret_file: Path | None = Field(
        None,
        description="a shared secret for the job (local runs); never in this file itself. "
        "None: the sites' own certificates (tls_dir) authenticate them",
    )
    tls_dir: Path | None = Field(None, description="ca.pem and <site>.pem/<site>.key")
    crl_file: Path | None = Field(
        None, description="the CA's revocation list, checked per handshake"
    )
    sync_timeout_s: float = Field(300.0, gt=0, description="longest wait on the other sites")

    @property
    def index(self) -> int:
        return self.sites.index(self.site)


class SiteJob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # The site's data: its own (`data`), or a public dataset, whole or the share it derives
    # from the seeded partition spec (`share`): never a list of samples from elsewhere.
    data: SiteData | None = Field(None, description="the site's own data; else `dataset`")
    dataset: str = "fashion-mnist"
    data_dir: Path | None = None
    share: DataShare | None = Field(None, description="the site's share of `dataset`")
    model: str = "cnn"
    workers: int = Field(1, ge=1)
    shards: int = Field(1, ge=1)
    dedicated_shards: bool = False
    batch_size: int = Field(64, ge=1, description="per worker")
    optimizer: OptimizerSpec = OptimizerSpec()
    epochs: int = Field(1, ge=1)
    steps: int | None = Field(
        None, ge=1, description="stop after this many steps; overrides epochs"
    )
    seed: int = 0
    threads: int | None = Field(
        None, ge=1, description="torch threads per rank; default shares the cores"
    )
    pin_cores: bool = Field(
        False, description="pin rank r (and its threads) to core r of those this process may use"
    )
    device: DeviceChoice = Field(
        "auto", description="cpu, cuda (rank i on cuda:LOCAL_RANK), auto: cuda when present"
    )
    bf16: bool = Field(False, description="forward and loss under bfloat16 autocast")
    checkpoint_every: int = Field(100, ge=1, description="steps between checkpoints")
    eval_every: int | None = Field(
        None, ge=1, description="steps between test evaluations; default each epoch"
    )
    comm_timeout_s: float = Field(
        300.0, gt=0, description="a rank waiting longer on a peer fails the site"
    )
    data_seed: int | None = Field(None, description="order of the site's batches; default seed")
    eval_samples: int | None = Field(
        None, ge=1, description="test images per periodic evaluation; default all"
    )
    geo: SiteGeo | None = None

    def resume_mismatches(self, stored: "SiteJob") -> list[str]:
        return [f for f in RESUME_INVARIANT if getattr(self, f) != getattr(stored, f)]

    @classmethod
    def load(cls, path: Path) -> "SiteJob":
        return cls.model_validate_json(path.read_text())
