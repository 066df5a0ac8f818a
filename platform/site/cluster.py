"""Start a site's ranks as processes, watch them, and stop them cleanly.

The parent never trains: it relays rank 0's events, turns SIGTERM/Ctrl-C into a
stop at the next clock (with a checkpoint), and when a rank dies it stops the
others and says which rank died, how, and where the last checkpoint is.
"""

import multiprocessing as mp
import os
import queue
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import (
    RankFailed,
    RankMessage,
    RankStats,
    SiteEvent,
    TrainingFinished,
)
from atoll.platform.core.signals import stop_signals
from atoll.platform.site.checkpoint import CheckpointStore
from atoll.platform.site.device import place_site
from atoll.platform.site.exchange import HostLinks, abort_barriers
from atoll.platform.site.layout import SiteLayout
from atoll.platform.site.rank import RankContext, rank_main
from atoll.platform.site.spec import SiteJob

_POLL_S = 0.1
_GRACE_S = 1.0  # after a failure, how long to wait for the root cause to surface
_TERMINATE_S = 5.0
_SHARED_MEMORY = Path("/dev/shm")


def cuda_devices() -> int:
    """CUDA devices this process can use (0 without CUDA)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


class SiteFailure(AtollError):
    """A rank died or failed; the message names it and the checkpoint to resume from."""


@dataclass
class SiteOutcome:
    finished: TrainingFinished  # rank 0's
    rank_stats: list[RankStats] = field(default_factory=list)
    stopped_by: str | None = None  # the signal that stopped the run early, if any


class SiteCluster:
    def __init__(self, job: SiteJob, out_dir: Path, resume: bool = False) -> None:
        self.job = job
        self.out_dir = out_dir
        self.resume = resume
        self.layout = SiteLayout(job.workers, job.shards, job.dedicated_shards)
        # Checked before any rank starts: `--device cuda` without CUDA is one line here.
        self.placement = place_site(job.device, cuda_devices(), self.layout.world_size)
        # Forked from a server that has imported torch once: a rank starts in
        # milliseconds instead of seconds, and nothing forks a process already
        # running threads.
        self._mp = mp.get_context("forkserver")
        self._mp.set_forkserver_preload(["atoll.platform.site.rank"])
        self._stop = self._mp.Event()
        self._stopped_by: str | None = None
        self._kill_now = False
        self._barrier_outboxes: tuple[Connection, ...] = ()

    @property
    def threads_per_rank(self) -> int:
        return self.job.threads or max(1, (os.cpu_count() or 1) // self.layout.world_size)

    def request_stop(self, reason: str) -> None:
        """Stop at the next clock boundary, after a checkpoint. Safe from signal handlers."""
        if self._stopped_by is None:
            self._stopped_by = reason
        self._stop.set()

    def run(self, on_event: Callable[[SiteEvent], None] = lambda event: None) -> SiteOutcome:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        events: mp.Queue[RankMessage] = self._mp.Queue()
        rendezvous_dir = Path(tempfile.mkdtemp(prefix="atoll-site-"))
        shared_dir = self._shared_memory_dir()
        # One pipe a rank for the shared-memory exchange's barrier (exchange.py); the parent
        # keeps every write end, to wake ranks waiting on one that failed.
        pipes = [
            self._mp.Pipe(duplex=False) for _ in range(self.layout.world_size if shared_dir else 0)
        ]
        self._barrier_outboxes = tuple(outbox for _, outbox in pipes)
        processes: list[BaseProcess] = []
        try:
            with stop_signals(self._on_stop_signal):
                for rank in range(self.layout.world_size):
                    links = (
                        HostLinks(
                            shared_dir,
                            pipes[rank][0],
                            self._barrier_outboxes,
                            self.job.comm_timeout_s,
                        )
                        if shared_dir
                        else None
                    )
                    ctx = RankContext(
                        rank=rank,
                        world_size=self.layout.world_size,
                        job=self.job,
                        out_dir=self.out_dir,
                        rendezvous=rendezvous_dir / "store",
                        resume=self.resume,
                        threads=self.threads_per_rank,
                        site_pid=os.getpid(),
                        placement=self.placement,
                        host_links=links,
                    )
                    p = self._mp.Process(
                        target=rank_main, args=(ctx, events, self._stop), name=f"atoll-rank-{rank}"
                    )
                    p.start()
                    processes.append(p)
                return self._watch(processes, events, on_event)
        finally:
            _terminate(processes)
            events.close()
            for inbox, outbox in pipes:
                inbox.close()
                outbox.close()
            shutil.rmtree(rendezvous_dir, ignore_errors=True)
            if shared_dir:
                shutil.rmtree(shared_dir, ignore_errors=True)

    def _shared_memory_dir(self) -> Path | None:
        """A folder in shared memory for the ranks' exchange, where one is worth having and
        there is one: CPU ranks, more than one (GPU ranks exchange through NCCL)."""
        if self.placement.kind != "cpu" or self.layout.world_size == 1:
            return None
        try:
            return Path(tempfile.mkdtemp(prefix="atoll-site-", dir=_SHARED_MEMORY))
        except OSError:
            return None  # no /dev/shm here: the ranks exchange through the process group

    def _watch(
        self,
        processes: list[BaseProcess],
        events: "mp.Queue[RankMessage]",
        on_event: Callable[[SiteEvent], None],
    ) -> SiteOutcome:
        finished: TrainingFinished | None = None
        stats: list[RankStats] = []
        errors: dict[int, RankFailed] = {}
        failed_at: float | None = None
        while True:
            if self._kill_now:
                raise SiteFailure("interrupted twice: ranks killed without a final checkpoint")
            try:
                event = events.get(timeout=_POLL_S)
            except queue.Empty:
                event = None
            if event is not None:
                if isinstance(event, RankFailed):
                    errors[event.rank] = event
                elif isinstance(event, RankStats):
                    stats.append(event)
                else:
                    if isinstance(event, TrainingFinished):
                        finished = event
                    on_event(event)
                continue  # drain the queue before looking at exit codes
            codes = [p.exitcode for p in processes]
            if failed_at is None and (errors or any(c not in (None, 0) for c in codes)):
                failed_at = time.monotonic()
                abort_barriers(self._barrier_outboxes)  # the others stop waiting for it
            if failed_at is not None:
                if all(c is not None for c in codes) or time.monotonic() - failed_at > _GRACE_S:
                    raise SiteFailure(self._explain_failure(codes, errors))
            elif all(c == 0 for c in codes):
                if finished is None:
                    raise SiteFailure("all ranks exited but rank 0 reported no result")
                return SiteOutcome(finished, stats, self._stopped_by)

    def _explain_failure(self, codes: list[int | None], errors: dict[int, RankFailed]) -> str:
        killed = [(r, c) for r, c in enumerate(codes) if c is not None and c < 0]
        if killed:
            rank, code = killed[0]
            cause = f"{self.layout.describe(rank)} was killed by {signal.Signals(-code).name}"
        else:
            # A rank whose peer vanished reports a connection error; prefer the original fault.
            own = [e for e in errors.values() if not _lost_a_peer(e)]
            first = next(iter(own or errors.values()), None)
            if first is not None:
                cause = f"{self.layout.describe(first.rank)} failed: {first.message}"
                (self.out_dir / "error.log").write_text(first.traceback)
            else:
                rank = next(r for r, c in enumerate(codes) if c not in (None, 0))
                cause = f"{self.layout.describe(rank)} exited with code {codes[rank]}"
        latest = CheckpointStore(self.out_dir / "checkpoints").latest()
        resume = (
            f"last checkpoint: step {latest.step}; rerun with --resume to continue from it"
            if latest
            else "no checkpoint was written yet"
        )
        return f"site stopped: {cause}; {resume}"

    def _on_stop_signal(self, name: str) -> None:
        if name == "SIGINT" and self._stop.is_set():
            self._kill_now = True  # a second Ctrl-C: do not wait for the clock to end
        self.request_stop(name)


def _lost_a_peer(error: RankFailed) -> bool:
    """A rank that failed only because another did."""
    message = error.message.lower()
    return message.startswith("peerlost") or "closed by peer" in message


def _terminate(processes: list[BaseProcess]) -> None:
    for p in processes:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + _TERMINATE_S
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()
