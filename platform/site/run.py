"""A site training run as the CLI and later the edge agent start it: a run folder,
its config, its JSONL log, the site cluster, and `summary.json` at the end.
"""

import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import SiteEvent, TrainingFailed, TrainingStarted
from atoll.platform.core.files import write_json
from atoll.platform.core.rundir import claim_run_dir
from atoll.platform.core.runlog import RunLog
from atoll.platform.data.datasets import check_dataset
from atoll.platform.data.readers import read_site_data
from atoll.platform.site.cluster import SiteCluster, SiteFailure, SiteOutcome
from atoll.platform.site.spec import SiteJob


def prepare_run_dir(out_dir: Path, job: SiteJob, *, resume: bool, overwrite: bool) -> None:
    """Refuse to mix runs: a folder holds one run, continued only by the same job."""
    # Before anything is written or started: a missing or malformed dataset is one line.
    if job.data is not None:
        read_site_data(job.data)
    else:
        check_dataset(job.dataset, job.data_dir)
    config_path = out_dir / "config.json"
    if resume:
        if not config_path.exists():
            raise AtollError(f"nothing to resume in {out_dir}: it has no config.json")
        stored = SiteJob.load(config_path)
        changed = job.resume_mismatches(stored)
        if changed:
            raise AtollError(
                f"cannot resume {out_dir} with a different {', '.join(changed)}: "
                "the run would no longer be the one its checkpoints belong to"
            )
    else:
        claim_run_dir(out_dir, overwrite)
    write_json(config_path, job.model_dump(mode="json"))


class Cluster(Protocol):
    """What runs a site's ranks: the single-host spawner (SiteCluster) or torchrun's rank 0."""

    @property
    def threads_per_rank(self) -> int: ...

    def run(self, on_event: Callable[[SiteEvent], None]) -> SiteOutcome: ...


def train_site(
    job: SiteJob,
    out_dir: Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    on_event: Callable[[SiteEvent], None] = lambda event: None,
    cluster: Cluster | None = None,
) -> dict[str, Any]:
    """Train one site to the end (or to a requested stop); returns what summary.json holds."""
    # First the cluster: a placement this machine cannot give fails before the folder is claimed.
    cluster = cluster or SiteCluster(job, out_dir, resume=resume)
    prepare_run_dir(out_dir, job, resume=resume, overwrite=overwrite)
    wall_start = time.time()
    starts: list[TrainingStarted] = []

    with RunLog(out_dir / "log.jsonl") as log:

        def relay(event: SiteEvent) -> None:
            if isinstance(event, TrainingStarted):
                starts.append(event)
            log.write(event)
            on_event(event)

        try:
            outcome = cluster.run(relay)
        except SiteFailure as e:
            log.write(TrainingFailed(time=time.time(), message=str(e)))
            raise

    if not starts:
        raise SiteFailure("rank 0 finished without saying it had started")
    started, finished = starts[0], outcome.finished
    steps_run = finished.step - started.step
    global_batch = job.batch_size * job.workers
    rank0 = next((s for s in outcome.rank_stats if s.rank == 0), None)
    steady_step_s = finished.steady_step_s
    summary = {
        "status": "stopped" if finished.stopped else "completed",
        "stopped_by": outcome.stopped_by if finished.stopped else None,
        "test_accuracy": finished.test_accuracy,
        "test_loss": finished.test_loss,
        "samples_per_s": global_batch / steady_step_s if steps_run and steady_step_s else 0.0,
        "samples_per_s_measured_over_steps": finished.steady_steps,
        "steps": finished.step,
        "total_steps": started.total_steps,
        "resumed_from_step": started.step if resume else None,
        "wall_s": time.time() - wall_start,
        "train_s": finished.train_s,
        "compute_s": rank0.compute_s if rank0 else None,
        "exchange_s": rank0.exchange_s if rank0 else None,
        "exchange": rank0.exchange if rank0 else None,
        "barrier_wait_s": sum(s.barrier_wait_s for s in outcome.rank_stats),
        "params": started.params,
        "threads_per_rank": cluster.threads_per_rank,
        "config": job.model_dump(mode="json"),
        "versions": {"atoll": version("atoll"), "torch": version("torch")},
    }
    write_json(out_dir / "summary.json", summary)
    return summary
