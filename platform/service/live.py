"""Live events for server-sent-event clients (the control plane's `/v1/events`, and the
dashboard's fan-out to browsers): published from any thread, read on the event loop. A
client too slow to keep up loses events rather than slowing anyone down; the telemetry
history has them all.

Every event gets an id, `<epoch>:<seq>`: the epoch names this process, the sequence
counts up. The last `_REPLAY` events are kept, so a client that reconnects with the id
of the last event it saw (`Last-Event-ID`) gets what it missed; one whose id is from
another process or older than what is kept is told to read the history again."""

import asyncio
import contextlib
import secrets
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

_QUEUE = 1000
_REPLAY = 2000


@dataclass(frozen=True)
class LiveEvent:
    kind: str  # telemetry | job | site (and `reset`, to a subscriber that cannot resume)
    data: dict[str, Any]
    job_id: str | None = None
    id: str = field(default="", compare=False)


@dataclass
class Subscription:
    queue: asyncio.Queue[LiveEvent]
    missed: list[LiveEvent]  # published before it subscribed, after its Last-Event-ID
    resumed: bool  # False: the id it gave could not be resumed from (see `reset`)
    start_id: str  # the last event published before it subscribed


class Hub:
    def __init__(self, replay: int = _REPLAY) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[LiveEvent]]] = []
        self._recent: deque[tuple[int, LiveEvent]] = deque(maxlen=replay)
        self._seq = 0
        self.epoch = secrets.token_hex(4)
        self.dropped = 0

    def publish(self, event: LiveEvent) -> None:
        """From any thread."""
        with self._lock:
            self._seq += 1
            event = LiveEvent(event.kind, event.data, event.job_id, f"{self.epoch}:{self._seq}")
            self._recent.append((self._seq, event))
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

    def _missed(self, last_event_id: str | None) -> tuple[list[LiveEvent], bool]:
        """Called with the lock held: the kept events after `last_event_id`, and whether
        they are all that was missed."""
        if not last_event_id:
            return [], True
        epoch, _, seq_text = last_event_id.partition(":")
        if epoch != self.epoch or not seq_text.isdigit():
            return [], False
        seq = int(seq_text)
        oldest = self._recent[0][0] if self._recent else self._seq + 1
        if seq > self._seq or seq < oldest - 1:
            return [], False
        return [event for s, event in self._recent if s > seq], True

    @asynccontextmanager
    async def subscribe(self, last_event_id: str | None = None) -> AsyncIterator[Subscription]:
        queue: asyncio.Queue[LiveEvent] = asyncio.Queue(_QUEUE)
        entry = (asyncio.get_running_loop(), queue)
        with self._lock:  # atomically: what was missed, then everything after it
            missed, resumed = self._missed(last_event_id)
            start_id = f"{self.epoch}:{self._seq}"
            self._subscribers.append(entry)
        try:
            yield Subscription(queue, missed, resumed, start_id)
        finally:
            with self._lock:
                self._subscribers.remove(entry)

    def recent(self) -> list[LiveEvent]:
        """The events kept for replay, oldest first."""
        with self._lock:
            return [event for _, event in self._recent]

    @property
    def last_id(self) -> str:
        with self._lock:
            return f"{self.epoch}:{self._seq}"

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)
