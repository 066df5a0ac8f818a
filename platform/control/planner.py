"""A job, planned for the sites that will run it: one start command per site.

`plan_site_jobs` (the planner the local launcher uses) does the work, with the WAN
endpoints the agents advertised. Added here: the job's secret and, with TLS, a
throwaway CA and a certificate per site. Nothing here reads data or builds a model: each
site reports its own class priors, sample count, model signature and size.
"""

import tempfile
from dataclasses import dataclass
from pathlib import Path

from atoll.platform.bus.messages import StartJob, TlsFiles
from atoll.platform.geo.job import GeoJob
from atoll.platform.net import new_job_secret
from atoll.platform.net.certs import write_job_certificates
from atoll.platform.site.plan import plan_site_jobs

# Stand-ins in the site jobs: each agent puts the paths of its own copies there.
SECRET_PLACEHOLDER = Path("secret")
TLS_PLACEHOLDER = Path("tls")


@dataclass(frozen=True)
class JobPlan:
    starts: dict[str, StartJob]
    secret: str


def plan_job(
    name: str,
    spec: GeoJob,
    geo_listen: dict[str, tuple[str, int]],
    tls: bool,
    sync_timeout_s: float,
) -> JobPlan:
    """`geo_listen`: site -> (host, first port) its agent advertised; shard s is on port + s."""
    scheme = "wss" if tls else "ws"
    endpoints = {
        site: tuple(f"{scheme}://{host}:{port + s}" for s in range(spec.shards))
        for site, (host, port) in geo_listen.items()
    }
    site_jobs = plan_site_jobs(
        spec,
        endpoints,
        SECRET_PLACEHOLDER,
        tls_dir=TLS_PLACEHOLDER if tls else None,
        sync_timeout_s=sync_timeout_s,
    )
    secret = new_job_secret()
    certificates = _certificates(tuple(site_jobs), name) if tls else {}
    starts = {
        site: StartJob(
            job_name=name,
            site_job=site_job.model_dump(mode="json"),
            secret=secret,
            tls=certificates.get(site),
            own_data=spec.data == "site",
            clocks=spec.clocks,
        )
        for site, site_job in site_jobs.items()
    }
    return JobPlan(starts, secret)


def _certificates(sites: tuple[str, ...], job: str) -> dict[str, TlsFiles]:
    with tempfile.TemporaryDirectory(prefix="atoll-certs-") as folder:
        configs = write_job_certificates(Path(folder), sites, job=job)
        return {
            site: TlsFiles(
                ca=c.ca_file.read_text(), cert=c.cert_file.read_text(), key=c.key_file.read_text()
            )
            for site, c in configs.items()
        }
