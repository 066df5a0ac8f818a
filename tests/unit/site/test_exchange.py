"""The shared-memory exchange and its pipe barrier, with each rank a thread of this process.

(The exchange between processes is tested end to end: tests/integration/site, where two-worker
sites through shared memory and torchrun's ranks through the process group both match one
process with the double batch.)"""

import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from atoll.platform.site.exchange import (
    HostLinks,
    PeerLost,
    PipeBarrier,
    SharedMemoryExchange,
    abort_barriers,
    create_shared_file,
    shared_size,
)
from atoll.platform.site.layout import SiteLayout

PARAMS = 10


@dataclass
class Seen:
    """What one rank saw: the stop flag, its inboxes, the parameters and lookahead shared."""

    stop: bool
    received: dict[tuple[int, int], torch.Tensor]
    params: torch.Tensor
    lookahead: torch.Tensor


def host_links(folder: Path, ranks: int, timeout_s: float = 10.0) -> list[HostLinks]:
    pipes = [multiprocessing.Pipe(duplex=False) for _ in range(ranks)]
    outboxes = tuple(outbox for _, outbox in pipes)
    return [HostLinks(folder, inbox, outboxes, timeout_s) for inbox, _ in pipes]


def on_every_rank(ranks: int, body: Callable[[int], object]) -> list[object]:
    """`body(rank)` in a thread a rank; what each returned, or raised."""
    results: list[object] = [None] * ranks

    def run(rank: int) -> None:
        try:
            results[rank] = body(rank)
        except Exception as e:  # handed to the test to look at
            results[rank] = e

    threads = [threading.Thread(target=run, args=(r,)) for r in range(ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


@pytest.mark.parametrize(
    ("workers", "shards", "dedicated"), [(2, 1, False), (2, 2, False), (3, 2, False), (2, 2, True)]
)
def test_owners_get_every_workers_slice_and_workers_every_owners_parameters(
    tmp_path: Path, workers: int, shards: int, dedicated: bool
) -> None:
    layout = SiteLayout(workers, shards, dedicated)
    file = tmp_path / "exchange"
    assert create_shared_file(file, shared_size(PARAMS, workers)) is None
    links = host_links(tmp_path, layout.world_size)

    def rank_body(rank: int) -> Seen:
        grads = torch.arange(PARAMS, dtype=torch.float32) + 100 * rank
        exchange = SharedMemoryExchange(layout, rank, grads, links[rank], file)
        inboxes = {
            (s, w): exchange.inbox(s, w)
            for s in layout.shards_of(rank)
            for w in range(workers)
            if w != rank
        }
        stop = exchange.agree_stop(requested=rank == 0, step=0)
        exchange.gather_gradients(step=0)
        received = {key: inbox.clone() for key, inbox in inboxes.items()}
        params = torch.full((PARAMS,), float(-1 - rank))
        lookahead = torch.full((PARAMS,), float(-10 - rank))
        exchange.share([params, lookahead], "the parameters")
        return Seen(stop, received, params, lookahead)

    results = on_every_rank(layout.world_size, rank_body)
    for rank, result in enumerate(results):
        assert isinstance(result, Seen), result
        assert result.stop is True  # rank 0's flag, on every rank
        for (shard, worker), got in result.received.items():
            start, end = layout.bounds(shard, PARAMS)
            assert got.tolist() == [i + 100.0 * worker for i in range(start, end)]
        if layout.is_worker(rank):
            for shard in range(shards):
                start, end = layout.bounds(shard, PARAMS)
                owner = layout.owner(shard)
                assert result.params[start:end].tolist() == [-1.0 - owner] * (end - start)
                assert result.lookahead[start:end].tolist() == [-10.0 - owner] * (end - start)


def test_the_barrier_keeps_a_fast_ranks_next_token_for_the_next_barrier(tmp_path: Path) -> None:
    links = host_links(tmp_path, 3)
    passed: list[list[int]] = [[], [], []]

    def rank_body(rank: int) -> None:
        barrier = PipeBarrier(links[rank], rank)
        for generation in range(1, 51):
            if rank == 2:
                time.sleep(0.001)  # the slow one: the others' next tokens arrive before its own
            barrier.wait("a test barrier")
            passed[rank].append(generation)

    assert on_every_rank(3, rank_body) == [None, None, None]
    assert passed == [list(range(1, 51))] * 3


def test_a_rank_that_never_arrives_times_out_naming_what_waited(tmp_path: Path) -> None:
    links = host_links(tmp_path, 2, timeout_s=0.2)
    with pytest.raises(PeerLost, match="clock 7: a rank stopped answering"):
        PipeBarrier(links[0], 0).wait("rank 0 exchanging gradients for clock 7")


def test_the_site_process_wakes_ranks_waiting_on_a_failed_one(tmp_path: Path) -> None:
    links = host_links(tmp_path, 3, timeout_s=30.0)
    started = time.monotonic()
    threading.Timer(0.2, abort_barriers, args=(links[0].outboxes,)).start()
    results = on_every_rank(2, lambda rank: PipeBarrier(links[rank], rank).wait("waiting"))
    for result in results:
        assert isinstance(result, PeerLost) and "another rank failed" in str(result), result
    assert time.monotonic() - started < 10


def test_no_room_for_the_file_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    problem = create_shared_file(tmp_path / "exchange", 1 << 62)
    assert problem is not None and "no room" in problem
