"""Group commit: requests hand their work to one thread, which does all that is waiting as
one batch (one transaction, one query) and answers each request when the batch is done.

Why: a commit costs a round trip and a flush of the database's log whatever it holds,
and each request that runs its own statements in a worker thread pays the trip to that
thread too. A batch pays them once. Nothing waits on purpose: the thread takes what
queued up while the previous batch ran (up to `max_batch`), so a lone request goes
alone at once, and under load batches grow by themselves.

A request is answered only after `handle` returned, i.e. after its batch committed: an
acknowledged write is on disk. `handle` answers each item on its own (a result, or the
exception that item raises), so one bad item fails no other.
"""

import asyncio
import contextlib
import queue
import threading
import zlib
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
Pending = tuple[Item, asyncio.AbstractEventLoop, asyncio.Future[Result]]


class BatcherClosed(RuntimeError):
    """The batcher is stopping or stopped: the item was not handled."""


class Batcher(Generic[Item, Result]):
    def __init__(
        self,
        name: str,
        handle: Callable[[list[Item]], Sequence[Result | Exception]],
        max_batch: int = 256,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self.name = name
        self.max_batch = max_batch
        self._handle = handle
        self._on_batch = on_batch
        self._queue: queue.SimpleQueue[Pending[Item, Result] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self) -> "Batcher[Item, Result]":
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    async def submit(self, item: Item) -> Result:
        """The item's result once its batch is done; raises what `handle` gave for it."""
        if self._closed or self._thread is None:
            raise BatcherClosed(f"{self.name} is not running")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queue.put((item, loop, future))
        return await future

    def close(self, timeout_s: float = 30.0) -> None:
        """Handles what is queued, then stops the thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            self._do(batch)

    def _do(self, batch: list[Pending[Item, Result]]) -> None:
        try:
            outcomes: Sequence[Result | Exception] = self._handle([p[0] for p in batch])
            if len(outcomes) != len(batch):
                raise RuntimeError(f"{self.name}: {len(outcomes)} outcomes for {len(batch)} items")
        except Exception as e:  # the batch as a whole failed: so did each of its items
            outcomes = [e] * len(batch)
        if self._on_batch is not None:
            self._on_batch(len(batch))
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Result], object]]] = {}
        for (_, loop, future), outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, outcome))
        for loop, settled in by_loop.items():
            # A closed loop raises: nobody waits for these any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, settled)


def _settle(settled: list[tuple["asyncio.Future[Result]", object]]) -> None:
    """On the requests' event loop: hand each waiting request its outcome (a request whose
    client went away has a cancelled future; its write stands, unacknowledged)."""
    for future, outcome in settled:
        if future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)  # type: ignore[arg-type]


class ShardedBatcher(Generic[Item, Result]):
    """Several batchers; an item goes to the one its key hashes to. Batches of different
    shards run at once, so their waits on the database overlap (one batcher is bound by
    its round trip and commit when the database is slow to answer, not by CPU); the items
    of one key always meet in one shard, so they are handled in the order they came and
    two shards never touch the same key's rows (no lock waits, no deadlocks between them).
    """

    def __init__(self, batchers: Sequence[Batcher[Item, Result]]) -> None:
        if not batchers:
            raise ValueError("a sharded batcher needs at least one batcher")
        self.batchers = list(batchers)

    def start(self) -> "ShardedBatcher[Item, Result]":
        for batcher in self.batchers:
            batcher.start()
        return self

    async def submit(self, key: str, item: Item) -> Result:
        return await self.batchers[shard_of(key, len(self.batchers))].submit(item)

    def close(self, timeout_s: float = 30.0) -> None:
        for batcher in self.batchers:
            batcher.close(timeout_s)


def shard_of(key: str, shards: int) -> int:
    """The same shard for a key in every process and run (unlike `hash`)."""
    return zlib.crc32(key.encode()) % shards
