"""A job, planned for the sites that will run it: one start command per site.

`plan_site_jobs` (the planner the local launcher uses) does the work, with the WAN
endpoints the agents advertised. Added here: each site's class priors and the model's
signature, which the agent reports to the registry; the model's size, from which the
WAN bytes BSP would have sent are known.

No secret is planned: geo links are mutual TLS with each site's own certificate (its
key never leaves the site), and each agent puts the paths of its identity (its
certificate, key, the CA and the revocation list) into its site job itself.
"""

from dataclasses import dataclass

import numpy as np

from atoll.platform.bus.messages import StartJob
from atoll.platform.data.datasets import load_dataset
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.wan import bsp_bytes_per_clock
from atoll.platform.model.zoo import build_model, model_signature
from atoll.platform.site.plan import plan_site_jobs


@dataclass(frozen=True)
class JobPlan:
    starts: dict[str, StartJob]
    params: int
    bsp_bytes_per_clock: int


def plan_job(
    name: str,
    spec: GeoJob,
    geo_listen: dict[str, tuple[str, int]],
    sync_timeout_s: float,
) -> JobPlan:
    """`geo_listen`: site -> (host, first port) its agent advertised; shard s is on port + s."""
    endpoints = {
        site: tuple(f"wss://{host}:{port + s}" for s in range(spec.shards))
        for site, (host, port) in geo_listen.items()
    }
    site_jobs = plan_site_jobs(spec, endpoints, None, sync_timeout_s=sync_timeout_s)
    train = load_dataset(spec.dataset, spec.data_dir).train
    model = build_model(spec.model, train.input_shape, train.num_classes, spec.seed)
    params = sum(p.numel() for p in model.parameters())
    signature = model_signature(model)
    labels = train.y.numpy()
    names = tuple(site_jobs)
    starts = {}
    for site, site_job in site_jobs.items():
        indices = np.asarray(site_job.train_indices or range(len(labels)), dtype=np.int64)
        counts = np.bincount(labels[indices], minlength=train.num_classes)
        starts[site] = StartJob(
            job_name=name,
            site_job=site_job.model_dump(mode="json"),
            class_priors=[float(c) for c in counts],
            samples=len(indices),
            model_signature=signature,
            clocks=spec.clocks,
        )
    return JobPlan(starts, params, bsp_bytes_per_clock(params, names, spec.shards))
