"""Turning a geo job into one site job per site: where its data comes from, its links and
their shapes, the policy it runs and where its mirrors listen.

No data is read here. In the emulated federation each site job carries the seeded
partition spec, and the site derives its own share where it runs; a job on the sites'
own data leaves `data` for each site's agent to fill in from its site.yaml.

The local launcher uses it with loopback addresses; a control plane uses it with
the addresses its edge agents registered.
"""

from pathlib import Path

from atoll.platform.geo.job import GeoJob
from atoll.platform.net.ports import free_loopback_port
from atoll.platform.site.spec import SiteGeo, SiteJob


def plan_site_jobs(
    job: GeoJob,
    endpoints: dict[str, tuple[str, ...]],
    secret_file: Path | None,
    *,
    tls_dir: Path | None = None,
    crl_file: Path | None = None,
    sync_timeout_s: float = 300.0,
    threads: int | None = None,
) -> dict[str, SiteJob]:
    """Site name -> its job. `endpoints` gives each site's URL per shard."""
    topology, links = job.topologies()
    names = topology.sites
    missing = [n for n in names if len(endpoints.get(n, ())) != job.shards]
    if missing:
        raise ValueError(f"no endpoint for each of the {job.shards} shard(s) of {missing}")
    job.partition_spec()  # a bad partition fails here, not at every site
    jobs = {}
    for i, name in enumerate(names):
        geo = SiteGeo(
            site=name,
            sites=names,
            policy=job.geo,
            endpoints={n: endpoints[n] for n in names},
            links={
                peer: (links.link(name, peer).latency_s, links.link(name, peer).bandwidth_bps)
                for peer in names
                if peer != name
            },
            secret_file=secret_file,
            tls_dir=tls_dir,
            crl_file=crl_file,
            sync_timeout_s=sync_timeout_s,
        )
        jobs[name] = SiteJob(
            dataset=job.dataset,
            data_dir=job.data_dir,
            model=job.model,
            workers=job.workers,
            shards=job.shards,
            batch_size=job.batch_size,
            optimizer=job.site_optimizer,
            steps=job.clocks,
            seed=job.seed,
            data_seed=job.site_seed(i),
            threads=threads,
            checkpoint_every=max(job.eval_every, 50),
            eval_every=job.eval_every,
            eval_samples=job.eval_samples,
            share=job.site_share(i, len(names)) if job.data == "emulated" else None,
            comm_timeout_s=sync_timeout_s + 60,
            geo=geo,
        )
    return jobs


def loopback_endpoints(
    sites: tuple[str, ...], shards: int, tls: bool
) -> dict[str, tuple[str, ...]]:
    """A free port on 127.0.0.1 for every shard of every site."""
    scheme = "wss" if tls else "ws"
    return {
        name: tuple(f"{scheme}://127.0.0.1:{free_loopback_port()}" for _ in range(shards))
        for name in sites
    }
