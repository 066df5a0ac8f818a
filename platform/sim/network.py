"""Simulated WAN links with the same model as Atoll's shaped links.

A link serialises one frame at a time at its bandwidth; a frame arrives one
latency after its last bit left. Queued control frames go before queued bulk
frames (never preempting the frame on the wire). Bytes count when a frame starts
to leave, as the real link counts them at the socket, with the same framing;
acknowledgements and heartbeats, small and batched, are not modelled.
"""

import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from atoll.platform.geo.messages import Lane
from atoll.platform.net.frames import DATA_HEADER_BYTES, wire_bytes
from atoll.platform.net.topology import LinkShape
from atoll.platform.sim.events import EventQueue

Deliver = Callable[[object, float], None]


@dataclass
class SimulatedLink:
    shape: LinkShape
    events: EventQueue
    deliver: Deliver
    masked: bool = False  # the dialing side masks its WebSocket frames: 4 bytes more each
    bytes_sent: int = 0
    frames_sent: int = 0
    _queues: dict[Lane, deque[tuple[int, object]]] = field(
        default_factory=lambda: {Lane.CONTROL: deque(), Lane.BULK: deque()}
    )
    _busy_until: float = 0.0
    _queued_bytes: int = 0

    def send(self, payload: object, nbytes: int, lane: Lane, now: float) -> None:
        """Queue a message of `nbytes`; it costs what the real link writes for it."""
        on_wire = wire_bytes(DATA_HEADER_BYTES + nbytes, self.masked)
        self._queues[lane].append((on_wire, payload))
        self._queued_bytes += on_wire
        if now >= self._busy_until:
            self._start_next(now)

    def backlog_s(self, now: float) -> float:
        """Time the link needs to carry what is on it and queued for it."""
        on_wire = max(0.0, self._busy_until - now)
        return on_wire + 8 * self._queued_bytes / self.shape.bandwidth_bps

    def _start_next(self, now: float) -> None:
        queue = self._queues[Lane.CONTROL] or self._queues[Lane.BULK]
        if not queue or now < self._busy_until:
            return
        nbytes, payload = queue.popleft()
        self._queued_bytes -= nbytes
        self.bytes_sent += nbytes
        self.frames_sent += 1
        done = now + 8 * nbytes / self.shape.bandwidth_bps
        self._busy_until = done
        self.events.at(done, self._start_next)
        self.events.at(done + self.shape.latency_s, functools.partial(self.deliver, payload))
