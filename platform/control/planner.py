"""A job, planned for the sites that will run it: one start command per site.

`plan_site_jobs` (the planner the local launcher uses) does the work, with the WAN
endpoints the agents advertised. Nothing here reads data or builds a model: each site
reports its own class priors, sample count, model signature and size.

No secret is planned: geo links are mutual TLS with each site's own certificate (its
key never leaves the site), and each agent puts the paths of its identity (its
certificate, key, the CA and the revocation list) into its site job itself.
"""

from dataclasses import dataclass

from atoll.platform.bus.messages import StartJob
from atoll.platform.geo.job import GeoJob
from atoll.platform.site.plan import plan_site_jobs
from atoll.platform.transfer.job import CartelJob, plan_cartel_sites


@dataclass(frozen=True)
class JobPlan:
    starts: dict[str, StartJob]


def plan_job(
    name: str,
    spec: GeoJob | CartelJob,
    geo_listen: dict[str, tuple[str, int]],
    sync_timeout_s: float,
) -> JobPlan:
    """`geo_listen`: site -> (host, first port) its agent advertised; shard s is on port + s.
    A cartel site's links to its neighbours take the first port."""
    if isinstance(spec, CartelJob):
        cartel_sites = plan_cartel_sites(name, spec, geo_listen)
        return JobPlan({
            site: StartJob(
                job_name=name,
                kind="cartel",
                site_job=site_job.model_dump(mode="json"),
                own_data=spec.data == "site",
                clocks=spec.batches,
            )
            for site, site_job in cartel_sites.items()
        })  # fmt: skip
    endpoints = {
        site: tuple(f"wss://{host}:{port + s}" for s in range(spec.shards))
        for site, (host, port) in geo_listen.items()
    }
    site_jobs = plan_site_jobs(spec, endpoints, None, sync_timeout_s=sync_timeout_s)
    starts = {
        site: StartJob(
            job_name=name,
            site_job=site_job.model_dump(mode="json"),
            own_data=spec.data == "site",
            clocks=spec.clocks,
        )
        for site, site_job in site_jobs.items()
    }
    return JobPlan(starts)
