import asyncio
import threading
from collections.abc import Callable

import pytest

from atoll.registry.core.batcher import Batcher, BatcherClosed, ShardedBatcher, shard_of


class Recorder:
    """A handler that records each batch, and can be held so that items queue up."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()

    def __call__(self, items: list[int]) -> list[int | Exception]:
        self.entered.set()
        self.release.wait(10)
        self.batches.append(list(items))
        return [ValueError(f"odd {i}") if i % 2 else i * 10 for i in items]


def test_each_item_gets_its_own_outcome() -> None:
    recorder = Recorder()
    batcher = Batcher("t", recorder).start()

    async def main() -> list[int | BaseException]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(4)), return_exceptions=True)

    try:
        outcomes = asyncio.run(main())
    finally:
        batcher.close()
    assert outcomes[0] == 0 and outcomes[2] == 20
    assert isinstance(outcomes[1], ValueError) and str(outcomes[1]) == "odd 1"
    assert isinstance(outcomes[3], ValueError)
    assert sorted(i for b in recorder.batches for i in b) == [0, 1, 2, 3]


def test_what_queues_while_a_batch_runs_goes_in_the_next_one_up_to_the_limit() -> None:
    recorder = Recorder()
    sizes: list[int] = []
    batcher = Batcher("t", recorder, max_batch=3, on_batch=sizes.append).start()

    async def main() -> list[int | BaseException]:
        recorder.release.clear()
        first = asyncio.ensure_future(batcher.submit(0))
        await asyncio.to_thread(recorder.entered.wait, 10)  # batch [0] is being handled
        rest = [asyncio.ensure_future(batcher.submit(i)) for i in (2, 4, 6, 8)]
        await asyncio.sleep(0.05)  # all four are queued
        recorder.release.set()
        return await asyncio.gather(first, *rest)

    try:
        assert asyncio.run(main()) == [0, 20, 40, 60, 80]
    finally:
        batcher.close()
    assert recorder.batches == [[0], [2, 4, 6], [8]]
    assert sizes == [1, 3, 1]


def broken(items: list[int]) -> list[int | Exception]:
    raise ConnectionError("database away")


@pytest.mark.parametrize(
    ("handle", "error", "message"),
    [
        (broken, ConnectionError, "database away"),  # the batch as a whole failed
        (lambda items: [], RuntimeError, "0 outcomes for 1 items"),  # a handler's mistake
    ],
)
def test_when_a_batch_fails_as_a_whole_each_of_its_items_fails_so(
    handle: Callable[[list[int]], list[int | Exception]], error: type[Exception], message: str
) -> None:
    batcher = Batcher("t", handle).start()

    async def main() -> None:
        with pytest.raises(error, match=message):
            await batcher.submit(1)

    try:
        asyncio.run(main())
    finally:
        batcher.close()


def test_closing_does_what_was_queued_then_takes_nothing() -> None:
    recorder = Recorder()
    batcher = Batcher("t", recorder).start()

    async def main() -> list[int]:
        recorder.release.clear()
        first = asyncio.ensure_future(batcher.submit(0))
        await asyncio.to_thread(recorder.entered.wait, 10)
        queued = asyncio.ensure_future(batcher.submit(2))
        await asyncio.sleep(0.05)
        closing = asyncio.ensure_future(asyncio.to_thread(batcher.close))
        await asyncio.sleep(0.05)
        recorder.release.set()
        await closing
        with pytest.raises(BatcherClosed):
            await batcher.submit(4)
        return list(await asyncio.gather(first, queued))

    assert asyncio.run(main()) == [0, 20]
    assert recorder.batches == [[0], [2]]


def test_a_batch_of_at_most_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="max_batch must be at least 1"):
        Batcher("t", lambda items: [], max_batch=0)


def test_a_keys_items_always_meet_in_one_shard_and_shards_share_the_keys() -> None:
    recorders = [Recorder() for _ in range(3)]
    sharded = ShardedBatcher([Batcher(f"t{i}", r) for i, r in enumerate(recorders)]).start()
    keys = [f"site-{i}" for i in range(30)]

    async def main() -> list[int]:
        return list(await asyncio.gather(*(sharded.submit(k, 2 * i) for i, k in enumerate(keys))))

    try:
        assert asyncio.run(main()) == [20 * i for i in range(30)]
    finally:
        sharded.close()
    for i, key in enumerate(keys):
        (holder,) = [r for r in recorders if any(2 * i in b for b in r.batches)]
        assert holder is recorders[shard_of(key, 3)]
    assert all(r.batches for r in recorders)  # 30 keys spread over all three
    assert shard_of("site-7", 3) == shard_of("site-7", 3)


def test_a_sharded_batcher_needs_a_batcher() -> None:
    with pytest.raises(ValueError, match="at least one batcher"):
        ShardedBatcher([])
