"""A geo-distributed training job: N sites, their data, the model and the geo policy.

The simulator and the real runtime take the same job, so their results compare.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from atoll.platform.data.names import DatasetName
from atoll.platform.data.schema import SCHEMAS, DataSchema, DataShare
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.model.names import ModelName
from atoll.platform.model.optim import OptimizerSpec

if TYPE_CHECKING:
    from atoll.platform.data.partition import PartitionSpec
    from atoll.platform.net.topology import Topology


class GeoJob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # The control plane also runs cartel jobs (platform/transfer/job.py); a spec without a
    # kind is a geo job, as every spec was before there were two.
    kind: Literal["geo"] = "geo"
    # `emulated`: one public dataset (`dataset`) split across the sites by `partition`, each
    # site deriving its own share where it runs. `site`: every site trains on the data its
    # own site.yaml names, which must have the job's schema.
    data: Literal["emulated", "site"] = "emulated"
    data_schema: DataSchema | None = Field(
        None, description="what the sites' data must be; default the schema of `dataset`"
    )
    dataset: DatasetName = "fashion-mnist"
    data_dir: Path | None = None
    model: ModelName = "cnn"
    topology: str = "three-continents"
    sites: int | None = Field(None, ge=1, description="use the topology's first N sites")
    partition: str = "dirichlet:0.5"
    workers: int = Field(1, ge=1, description="workers per site")
    shards: int = Field(1, ge=1, description="parameter-server shards per site")
    batch_size: int = Field(32, ge=1, description="per worker")
    optimizer: OptimizerSpec = OptimizerSpec()
    geo: GeoSpec = GeoSpec()
    clocks: int = Field(300, ge=1, description="site iterations to run")
    target_accuracy: float | None = Field(None, gt=0, le=1)
    stop_at_target: bool = False
    eval_every: int = Field(10, ge=1, description="clocks between test evaluations")
    eval_samples: int = Field(2000, ge=1, description="test images per periodic evaluation")
    seed: int = 0
    lan_links: bool = Field(
        False, description="carry every policy's traffic over LAN links (ablations: no delay)"
    )

    @property
    def label(self) -> str:
        return self.geo.label

    @property
    def expected_schema(self) -> DataSchema:
        return self.data_schema or SCHEMAS[self.dataset]

    @property
    def site_optimizer(self) -> OptimizerSpec:
        """What each site's optimizer runs.

        Under asp, updates that arrive up to DS clocks late act as momentum of their
        own ("asynchrony begets momentum", Mitliagkas et al., 2016); stacked on the
        optimizer's full momentum they overshoot, so the sites keep only the rest.
        A lookahead takes the gradient where those late updates will have moved the
        replica instead, so the optimizer keeps its momentum.
        """
        geo, optimizer = self.geo, self.optimizer
        # Measured for release only; the other exchanges rely on their lookahead (direct,
        # measured: without it the replicas diverged or stayed near chance).
        compensate = geo.compensate_momentum and not geo.lookahead and geo.exchange == "release"
        if geo.policy != "asp" or not compensate or optimizer.name != "sgd":
            return optimizer
        momentum = max(0.0, 1 - (1 - optimizer.momentum) * (1 + geo.staleness))
        return optimizer.model_copy(update={"momentum": momentum})

    # The job itself is plain data that the command line and the control plane read at
    # start; what these two need (numpy, the net package) loads when they are called.
    def topologies(self) -> "tuple[Topology, Topology]":
        """The job's sites, and the links their traffic crosses (LAN links for `lan`)."""
        from atoll.platform.net.topology import load_topology

        topology = load_topology(self.topology)
        if self.sites is not None:
            topology = topology.subset(self.sites)
        if self.geo.uses_lan_links or self.lan_links:
            return topology, topology.with_links_of(load_topology("lan"))
        return topology, topology

    def partition_spec(self) -> "PartitionSpec":
        from atoll.platform.data.partition import PartitionSpec

        return PartitionSpec.parse(self.partition)

    def site_share(self, site: int, sites: int) -> DataShare:
        """The seeded partition spec site `site` of `sites` derives its share from."""
        partition = str(self.partition_spec())
        return DataShare(partition=partition, sites=sites, index=site, seed=self.seed)

    def site_seed(self, site: int) -> int:
        """Each site shuffles its own data its own way, reproducibly."""
        return self.seed * 1_000_003 + site
