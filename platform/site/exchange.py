"""How a site's ranks move a clock's tensors: gradient slices to the shards that own them,
the shards' new parameters (and asp's lookahead) back to every worker, rank 0's stop flag.

Two ways, one interface:
- `ProcessGroupExchange`: sends and receives over the site's process group (gloo or NCCL).
  Ranks on several machines (torchrun) and ranks on GPUs use it.
- `SharedMemoryExchange`: ranks on one host's CPUs copy slices through a file in shared
  memory and meet at a barrier made of pipes. On loopback, gloo spent 2 ms on each of a
  clock's two transfers of 0.8 MB and 0.2-0.4 ms on each round trip, about what a worker's
  forward and backward cost in 6 ms of a 40 ms clock; a copy through shared memory takes
  0.1 ms and a pipe barrier tens of microseconds. The single-host spawner (cluster.py) sets
  it up; NCCL does the same for GPUs of one node, which is why only CPU ranks need it.

Both fill the same buffers in the same order, so the averaged gradients, and therefore
the model, are the same bit for bit whichever carries them.
"""

import mmap
import os
import sys
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from time import monotonic

import torch
import torch.distributed as dist

from atoll.platform.site.layout import SiteLayout

# + shard index: one channel per shard and kind of tensor
_GRAD_TAG, _SHARED_TAG = 0, 1 << 20
_ABORT = -1  # a barrier token from the site process: another rank failed
_FLOAT_BYTES = 4
_CONTROL_BYTES = 64  # the stop flag, and room to keep the tensors cache-line aligned
_SHARED_BUFFERS = 2  # the parameters and asp's lookahead


class PeerLost(RuntimeError):
    """A peer rank stopped answering: it died, hung, or its connection closed."""


class Exchange(ABC):
    """One rank's side of a clock's exchanges; every rank calls each method in the same order."""

    name: str  # in the site's summary

    def __init__(self, layout: SiteLayout, rank: int, grads: torch.Tensor) -> None:
        self.layout, self.rank, self.grads = layout, rank, grads
        self.num_params = grads.numel()

    @abstractmethod
    def agree_stop(self, requested: bool, step: int) -> bool:
        """Rank 0's `requested`, on every rank: all stop at the same clock."""

    @abstractmethod
    def inbox(self, shard: int, worker: int) -> torch.Tensor:
        """Where `gather_gradients` puts `worker`'s slice of the gradient for `shard` (owned
        by this rank; `worker` another rank)."""

    @abstractmethod
    def gather_gradients(self, step: int) -> None:
        """Workers' gradient slices into their owners' inboxes."""

    @abstractmethod
    def share(self, buffers: Sequence[torch.Tensor], what: str) -> None:
        """Each owner's slices of `buffers` (the parameters; asp's lookahead) to every worker."""

    def _slice(self, buffer: torch.Tensor, shard: int) -> torch.Tensor:
        start, end = self.layout.bounds(shard, self.num_params)
        return buffer[start:end]

    def _owned(self) -> list[int]:
        return self.layout.shards_of(self.rank)

    def _remote(self) -> list[int]:
        """The shards whose owner is another rank, if this rank is a worker."""
        if not self.layout.is_worker(self.rank):
            return []
        return [s for s in range(self.layout.shards) if self.layout.owner(s) != self.rank]

    def _other_workers(self) -> list[int]:
        return [w for w in range(self.layout.workers) if w != self.rank]


class ProcessGroupExchange(Exchange):
    """Over the site's process group: point-to-point sends and receives, posted together."""

    name = "process group"

    def __init__(self, layout: SiteLayout, rank: int, grads: torch.Tensor) -> None:
        super().__init__(layout, rank, grads)
        self._inboxes: dict[tuple[int, int], torch.Tensor] = {}

    def agree_stop(self, requested: bool, step: int) -> bool:
        mine = 1.0 if self.rank == 0 and requested else 0.0
        flag = torch.tensor([mine], device=self.grads.device)
        if self.layout.world_size > 1:
            try:
                dist.broadcast(flag, src=0)
            except RuntimeError as e:
                raise PeerLost(f"a rank stopped answering at the start of clock {step}: {e}") from e
        return bool(flag.item())

    def inbox(self, shard: int, worker: int) -> torch.Tensor:
        start, end = self.layout.bounds(shard, self.num_params)
        buffer = torch.empty(end - start, device=self.grads.device)
        self._inboxes[shard, worker] = buffer
        return buffer

    def gather_gradients(self, step: int) -> None:
        ops = [
            dist.P2POp(
                dist.isend, self._slice(self.grads, s), self.layout.owner(s), tag=_GRAD_TAG + s
            )
            for s in self._remote()
        ]
        ops += [
            dist.P2POp(dist.irecv, buffer, worker, tag=_GRAD_TAG + shard)
            for (shard, worker), buffer in sorted(self._inboxes.items())
        ]
        _wait_all(ops, f"rank {self.rank} exchanged no gradients for clock {step}")

    def share(self, buffers: Sequence[torch.Tensor], what: str) -> None:
        ops = []
        for kind, buffer in enumerate(buffers):
            tag = _SHARED_TAG * (kind + 1)
            ops += [
                dist.P2POp(dist.isend, self._slice(buffer, s), worker, tag=tag + s)
                for s in self._owned()
                for worker in self._other_workers()
            ]
            ops += [
                dist.P2POp(dist.irecv, self._slice(buffer, s), self.layout.owner(s), tag=tag + s)
                for s in self._remote()
            ]
        _wait_all(ops, f"rank {self.rank} received no {what}")


def _wait_all(ops: list[dist.P2POp], what: str) -> None:
    """Post a phase's sends and receives together (NCCL runs them as one group, so two ranks
    sending to each other never wait on each other; gloo matches them by tag), then wait."""
    if not ops:
        return
    for work in dist.batch_isend_irecv(ops):
        try:
            work.wait()
        except RuntimeError as e:
            raise PeerLost(f"{what}: {e}") from e


@dataclass(frozen=True)
class HostLinks:
    """What the single-host spawner gives each rank for a shared-memory exchange."""

    folder: Path  # in /dev/shm: the site process removes it when the site ends
    inbox: Connection  # this rank's barrier tokens arrive here
    outboxes: tuple[Connection, ...]  # every rank's inbox, by rank
    timeout_s: float


class PipeBarrier:
    """All of a site's ranks meet here. Each rank sends a token with the barrier's number to
    every other rank and waits for theirs: one hop, and the kernel's pipe locks order every
    write a rank made before it sent with every read the others make after they received
    (which plain flags in shared memory would not on weakly ordered CPUs). The site process
    can send an abort token, so that ranks waiting on a failed peer stop at once."""

    def __init__(self, links: HostLinks, rank: int) -> None:
        self.links, self.rank = links, rank
        self.generation = 0
        self._arrived: Counter[int] = Counter()  # tokens from ranks already at a later barrier

    def wait(self, what: str) -> None:
        self.generation += 1
        token = self.generation.to_bytes(8, "little", signed=True)
        for rank, outbox in enumerate(self.links.outboxes):
            if rank != self.rank:
                outbox.send_bytes(token)
        deadline = monotonic() + self.links.timeout_s
        while self._arrived[self.generation] < len(self.links.outboxes) - 1:
            left = deadline - monotonic()
            if left <= 0 or not self.links.inbox.poll(left):
                raise PeerLost(
                    f"{what}: a rank stopped answering (it did not reach the barrier within "
                    f"{self.links.timeout_s:.0f} s)"
                )
            generation = int.from_bytes(self.links.inbox.recv_bytes(), "little", signed=True)
            if generation == _ABORT:
                raise PeerLost(f"{what}: the site stopped its ranks after another rank failed")
            self._arrived[generation] += 1
        del self._arrived[self.generation]


def abort_barriers(outboxes: Sequence[Connection]) -> None:
    """From the site process: every rank waiting at a barrier raises PeerLost."""
    for outbox in outboxes:
        with suppress(OSError):  # that rank's end is gone already
            outbox.send_bytes(_ABORT.to_bytes(8, "little", signed=True))


class SharedMemoryExchange(Exchange):
    """Through one file in shared memory: a control word, one gradient region per worker, and
    a region per shared buffer, each the size of the flat model. Writers copy in, everyone
    meets at the barrier, readers copy out (owners read inboxes in place)."""

    name = "shared memory"

    def __init__(
        self, layout: SiteLayout, rank: int, grads: torch.Tensor, links: HostLinks, file: Path
    ) -> None:
        super().__init__(layout, rank, grads)
        self.barrier = PipeBarrier(links, rank)
        regions = layout.workers + _SHARED_BUFFERS
        # Mapped for the rank's life: the inboxes and regions are views of it. The site
        # process removes the file when the site ends.
        with file.open("r+b") as f:
            self._map = mmap.mmap(f.fileno(), shared_size(self.num_params, layout.workers))
        self._control = torch.frombuffer(self._map, dtype=torch.int32, count=1)
        floats = torch.frombuffer(
            self._map, dtype=torch.float32, offset=_CONTROL_BYTES, count=regions * self.num_params
        )
        self._regions = floats.view(regions, self.num_params)

    def agree_stop(self, requested: bool, step: int) -> bool:
        if self.rank == 0:
            self._control[0] = 1 if requested else 0
        self.barrier.wait(f"rank {self.rank} at the start of clock {step}")
        return bool(self._control[0].item())

    def inbox(self, shard: int, worker: int) -> torch.Tensor:
        return self._slice(self._regions[worker], shard)  # read in place: no copy out

    def gather_gradients(self, step: int) -> None:
        for s in self._remote():  # none on a rank that is not a worker
            self._slice(self._regions[self.rank], s).copy_(self._slice(self.grads, s))
        self.barrier.wait(f"rank {self.rank} exchanging gradients for clock {step}")

    def share(self, buffers: Sequence[torch.Tensor], what: str) -> None:
        if len(buffers) > _SHARED_BUFFERS:
            raise ValueError(f"{len(buffers)} buffers to share, room for {_SHARED_BUFFERS}")
        regions = [self._regions[self.layout.workers + i] for i in range(len(buffers))]
        for buffer, region in zip(buffers, regions, strict=True):
            for s in self._owned():
                self._slice(region, s).copy_(self._slice(buffer, s))
        self.barrier.wait(f"rank {self.rank} waiting for {what}")
        for buffer, region in zip(buffers, regions, strict=True):
            for s in self._remote():
                self._slice(buffer, s).copy_(self._slice(region, s))


def shared_size(num_params: int, workers: int) -> int:
    return _CONTROL_BYTES + (workers + _SHARED_BUFFERS) * num_params * _FLOAT_BYTES


def create_shared_file(file: Path, size: int) -> str | None:
    """The exchange's file, its pages reserved now; None, or why not (no room)."""
    fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        # Reserved up front: a tmpfs that fills up later would kill a rank with SIGBUS
        # in the middle of a clock instead of failing here.
        os.posix_fallocate(fd, 0, size)
    except OSError as e:
        return f"{file.parent} has no room for {size / 1e6:.1f} MB ({e.strerror})"
    finally:
        os.close(fd)
    return None


def build_exchange(
    layout: SiteLayout, rank: int, grads: torch.Tensor, links: HostLinks | None
) -> Exchange:
    """Shared memory where the spawner offered it (one host, CPU ranks) and it has room;
    else the process group. Rank 0 creates the file and tells the others, so every rank
    picks the same."""
    if links is None or layout.world_size == 1 or grads.device.type != "cpu":
        return ProcessGroupExchange(layout, rank, grads)
    file = links.folder / "exchange"
    problem = None
    if rank == 0:
        problem = create_shared_file(file, shared_size(grads.numel(), layout.workers))
    ready = torch.tensor([1 if problem is None else 0])
    dist.broadcast(ready, src=0)
    if not ready.item():
        if problem is not None:
            print(f"atoll: the site's ranks exchange over gloo: {problem}", file=sys.stderr)
        return ProcessGroupExchange(layout, rank, grads)
    return SharedMemoryExchange(layout, rank, grads, links, file)
