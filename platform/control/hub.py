"""Live events for server-sent-event clients: published from the service's threads,
read on the event loop. A client too slow to keep up loses events rather than slowing
anyone down; the telemetry history has them all."""

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

_QUEUE = 1000


@dataclass(frozen=True)
class LiveEvent:
    kind: str  # telemetry | job | site
    data: dict[str, Any]
    job_id: str | None = None


class Hub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[LiveEvent]]] = []
        self.dropped = 0

    def publish(self, event: LiveEvent) -> None:
        """From any thread."""
        with self._lock:
            subscribers = list(self._subscribers)
        for loop, queue in subscribers:
            # A loop that has closed raises; its subscriber unsubscribes as it goes.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._offer, queue, event)

    def _offer(self, queue: asyncio.Queue[LiveEvent], event: LiveEvent) -> None:
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    @asynccontextmanager
    async def subscribe(self) -> AsyncIterator[asyncio.Queue[LiveEvent]]:
        queue: asyncio.Queue[LiveEvent] = asyncio.Queue(_QUEUE)
        entry = (asyncio.get_running_loop(), queue)
        with self._lock:
            self._subscribers.append(entry)
        try:
            yield queue
        finally:
            with self._lock:
                self._subscribers.remove(entry)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)
