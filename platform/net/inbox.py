"""The bounded queue between the event loop (producer) and the application (consumer).

Memory is bounded in bytes: when the application falls behind, the loop stops
reading from the peers' sockets (see `wait_for_space`), TCP fills up, acks stop, and
the senders' queues push back on `send`. Events weigh nothing and always get in.
"""

import asyncio
import contextlib
import threading
import time
from collections import deque

from atoll.platform.net.events import Message, Received


class Inbox:
    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._items: deque[Received] = deque()
        self._bytes = 0
        self._ready = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._space: asyncio.Event | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind to the loop that calls `put`; call from that loop."""
        self._loop = loop
        self._space = asyncio.Event()
        self._space.set()

    @property
    def full(self) -> bool:
        return self._bytes >= self.limit_bytes

    @property
    def queued_bytes(self) -> int:
        return self._bytes

    # loop side

    def put(self, item: Received) -> None:
        with self._ready:
            self._items.append(item)
            if isinstance(item, Message):
                self._bytes += len(item.payload)
                if self.full and self._space is not None:
                    self._space.clear()
            self._ready.notify()

    async def wait_for_space(self) -> None:
        assert self._space is not None, "attach() first"
        await self._space.wait()

    # application side

    def get(self, timeout: float | None) -> Received | None:
        """The next item; waits up to `timeout` seconds (None: for ever, 0: not at all)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._ready:
            while not self._items:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._ready.wait(remaining)
            return self._take()

    def get_all(self) -> list[Received]:
        with self._ready:
            return [self._take() for _ in range(len(self._items))]

    def _take(self) -> Received:
        item = self._items.popleft()
        if isinstance(item, Message):
            was_full = self.full
            self._bytes -= len(item.payload)
            if was_full and not self.full and self._loop is not None:
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    self._loop.call_soon_threadsafe(self._reopen)
        return item

    def _reopen(self) -> None:
        # on the loop; the inbox may have filled up again since the call was scheduled
        with self._ready:
            if not self.full and self._space is not None:
                self._space.set()
