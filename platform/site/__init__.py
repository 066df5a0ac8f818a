"""The site tier: K workers and S parameter-server shards, BSP over torch.distributed."""

from atoll.platform.site.cluster import SiteCluster, SiteFailure, SiteOutcome
from atoll.platform.site.layout import SiteLayout
from atoll.platform.site.optim import OptimizerSpec
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

__all__ = [
    "OptimizerSpec",
    "SiteCluster",
    "SiteFailure",
    "SiteJob",
    "SiteLayout",
    "SiteOutcome",
    "train_site",
]
