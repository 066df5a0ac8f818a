"""A site larger than one machine: its ranks started by PyTorch's own launcher, one
`torchrun` per node, instead of the single-host spawner (cluster.py).

    torchrun --nnodes 2 --nproc-per-node K --rdzv-backend c10d --rdzv-endpoint HOST:PORT \\
        -m atoll.cli site run --job site-job.json --out /shared/run

Each process is one rank (torchrun's RANK, LOCAL_RANK, GROUP_RANK: the node) and joins the
site's process group by env:// rendezvous. Rank 0 writes the run log and summary.json as
`atoll site run` always does; `--out` must be a folder every node sees (a shared file
system): each shard saves its slice of a checkpoint there. When a node's ranks die, the
others fail at their next exchange with a message naming that node and the checkpoint;
starting every node again with `--resume` continues from it.
"""

import os
import signal
import socket
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import (
    RankFailed,
    RankMessage,
    RankStats,
    SiteEvent,
    TrainingFinished,
)
from atoll.platform.site.checkpoint import CheckpointStore
from atoll.platform.site.cluster import SiteFailure, SiteOutcome, cuda_devices
from atoll.platform.site.device import place_site
from atoll.platform.site.exchange import PeerLost
from atoll.platform.site.layout import SiteLayout
from atoll.platform.site.rank import RankContext, SiteRank
from atoll.platform.site.spec import SiteJob


@dataclass(frozen=True)
class TorchrunRank:
    """What torchrun tells each process it starts."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node: int  # GROUP_RANK

    @classmethod
    def from_env(cls) -> "TorchrunRank | None":
        """None unless started by torchrun (or another env:// launcher)."""
        env = os.environ
        if "TORCHELASTIC_RUN_ID" not in env and "RANK" not in env:
            return None
        try:
            return cls(
                rank=int(env["RANK"]),
                world_size=int(env["WORLD_SIZE"]),
                local_rank=int(env.get("LOCAL_RANK", "0")),
                local_world_size=int(env.get("LOCAL_WORLD_SIZE", env["WORLD_SIZE"])),
                node=int(env.get("GROUP_RANK", "0")),
            )
        except (KeyError, ValueError) as e:
            raise AtollError(f"torchrun's environment is incomplete or malformed: {e}") from e


class _Events:
    """The queue a rank reports to, in-process: events go straight to the caller."""

    def __init__(self, on_event: Callable[[RankMessage], None]) -> None:
        self.on_event = on_event

    def put(self, event: RankMessage) -> None:
        self.on_event(event)


class TorchrunSite:
    """One rank of a site under torchrun; `run` has SiteCluster's shape, so `train_site`
    drives rank 0's as it drives the single-host cluster."""

    def __init__(self, job: SiteJob, out_dir: Path, me: TorchrunRank, resume: bool) -> None:
        self.job, self.out_dir, self.me, self.resume = job, out_dir, me, resume
        self.layout = SiteLayout(job.workers, job.shards, job.dedicated_shards)
        if me.world_size != self.layout.world_size:
            raise AtollError(
                f"torchrun started {me.world_size} ranks but the site job needs "
                f"{self.layout.world_size} ({job.workers} workers, {job.shards} shards"
                f"{', dedicated' if job.dedicated_shards else ''}): make --nnodes x "
                "--nproc-per-node equal to it"
            )
        self.placement = place_site(job.device, cuda_devices(), me.local_world_size)
        self._stop = threading.Event()
        self._stopped_by: str | None = None
        self.nodes: list[tuple[int, str]] = []  # by rank: (node, host)

    @property
    def threads_per_rank(self) -> int:
        cores = os.cpu_count() or 1
        return self.job.threads or max(1, cores // self.me.local_world_size)

    def request_stop(self, reason: str) -> None:
        self._stopped_by = self._stopped_by or reason
        self._stop.set()

    def run(self, on_event: Callable[[SiteEvent], None] = lambda event: None) -> SiteOutcome:
        finished: list[TrainingFinished] = []
        stats: list[RankStats] = []

        def take(event: RankMessage) -> None:
            if isinstance(event, RankStats):
                stats.append(event)
            elif not isinstance(event, RankFailed):
                if isinstance(event, TrainingFinished):
                    finished.append(event)
                on_event(event)

        me = self.me
        torch.set_num_threads(self.threads_per_rank)
        if self.placement.kind == "cuda":
            torch.cuda.set_device(me.local_rank)
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        dist.init_process_group(
            self.placement.backend,
            init_method="env://",
            rank=me.rank,
            world_size=me.world_size,
            timeout=timedelta(seconds=self.job.comm_timeout_s),
        )
        try:
            self.nodes = self._gather_nodes()
            ctx = RankContext(
                rank=me.rank,
                world_size=me.world_size,
                job=self.job,
                out_dir=self.out_dir,
                rendezvous=None,
                resume=self.resume,
                threads=self.threads_per_rank,
                site_pid=os.getpid(),
                placement=self.placement,
                local_rank=me.local_rank,
            )
            SiteRank(ctx, _Events(take), self._stop).run()  # type: ignore[arg-type]
        except (PeerLost, RuntimeError) as e:
            raise SiteFailure(self._explain(e)) from e
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            if dist.is_initialized():
                dist.destroy_process_group()
        if me.rank != 0:
            raise _NotRankZero
        if not finished:
            raise SiteFailure("rank 0 ended without a result")
        return SiteOutcome(finished[0], stats, self._stopped_by)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self.request_stop(signal.Signals(signum).name)

    def _gather_nodes(self) -> list[tuple[int, str]]:
        nodes: list[tuple[int, str]] = [(0, "")] * self.me.world_size
        dist.all_gather_object(nodes, (self.me.node, socket.gethostname()))
        return nodes

    def _explain(self, error: BaseException) -> str:
        """Which node went away, as far as this rank can tell, and where to resume from."""
        others: dict[int, list[int]] = {}
        for rank, (node, _) in enumerate(self.nodes):
            if node != self.me.node:
                others.setdefault(node, []).append(rank)
        if self.nodes and others:
            lost = "; ".join(
                f"node {node} ({self.nodes[ranks[0]][1]}: ranks {', '.join(map(str, ranks))})"
                for node, ranks in sorted(others.items())
            )
            cause = f"lost {lost}, seen from node {self.me.node} rank {self.me.rank}"
        else:
            cause = f"rank {self.me.rank} on node {self.me.node} failed"
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        latest = CheckpointStore(self.out_dir / "checkpoints").latest()
        resume = (
            f"last checkpoint: step {latest.step} in {self.out_dir}; start every node again "
            "with --resume to continue from it"
            if latest
            else "no checkpoint was written yet"
        )
        return f"site stopped: {cause} ({first_line}); {resume}"


class _NotRankZero(Exception):
    """A rank other than 0 ended well: it has no summary to write."""


def run_torchrun_rank(
    job: SiteJob, out_dir: Path, me: TorchrunRank, resume: bool
) -> dict[str, object] | None:
    """This process's rank of the site; rank 0 returns the summary, the others None."""
    from atoll.platform.site.run import train_site

    site = TorchrunSite(job, out_dir, me, resume)
    if me.rank == 0:  # rank 0 prepares the shared run folder and keeps its log
        return train_site(job, out_dir, resume=resume, cluster=site)
    try:
        site.run()
    except _NotRankZero:
        return None
    except SiteFailure:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f"error-rank-{me.rank}.log").write_text(traceback.format_exc())
        raise
    raise AssertionError("a rank other than 0 returned a result")
