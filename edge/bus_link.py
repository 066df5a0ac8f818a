"""The agent's side of the Redis bus, in a thread of its own: commands in, heartbeats,
status and telemetry out, acknowledgements once the agent has applied a command.

While Redis is away, the agent trains on: this thread retries with backoff, keeps the
newest telemetry (up to a bound) and the latest status, and sends them when Redis is
back. Commands delivered before but never acknowledged (the agent died first) are
read again at start and after every reconnection.
"""

import queue
import threading
import time
from collections import deque
from collections.abc import Callable

from atoll.platform.bus.connection import Bus, keep_trying
from atoll.platform.bus.keys import liveness_ttl_s
from atoll.platform.bus.messages import AgentStatus, Beat, Command, Telemetry

_BACKLOG = 2000  # telemetry samples kept while Redis is away


class BusLink:
    def __init__(
        self,
        bus: Bus,
        site: str,
        heartbeat_s: float,
        telemetry_maxlen: int,
        on_crl: Callable[[str], None] = lambda _pem: None,
        crl_poll_s: float = 10.0,
    ) -> None:
        self.bus = bus
        self.on_crl = on_crl
        self.crl_poll_s = crl_poll_s
        self._next_crl = 0.0
        self.site = site
        self.heartbeat_s = heartbeat_s
        self.telemetry_maxlen = telemetry_maxlen
        self.commands: queue.Queue[tuple[str, Command | None]] = queue.Queue()
        self.connected = False
        self._lock = threading.Lock()
        self._telemetry: deque[Telemetry] = deque(maxlen=_BACKLOG)
        self._acks: list[str] = []
        self._status: AgentStatus | None = None
        self._status_sent: AgentStatus | None = None
        self._beat: Beat | None = None
        self._next_beat = 0.0
        self._read_pending = True

    # -- from the agent's thread -------------------------------------------------------

    def send_telemetry(self, sample: Telemetry) -> None:
        with self._lock:
            self._telemetry.append(sample)

    def set_status(self, status: AgentStatus, beat: Beat) -> None:
        """The latest status (sent when it changes) and what the heartbeat says."""
        with self._lock:
            self._status = status
            if self._beat is None or beat.state != self._beat.state:
                self._next_beat = 0.0  # a change of state is shown at once
            self._beat = beat

    def ack(self, entry_id: str) -> None:
        with self._lock:
            self._acks.append(entry_id)

    def flushed(self) -> bool:
        with self._lock:
            return not self._telemetry and not self._acks and self._status is self._status_sent

    # -- the thread --------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        keep_trying(self._step, stop, f"agent {self.site}", on_reconnect=self._reconnected)
        self.connected = False

    def _reconnected(self) -> None:
        self._read_pending = True
        self._next_beat = 0.0
        self._next_crl = 0.0

    def _step(self) -> None:
        self._heartbeat()
        self._read_crl()
        self._flush()
        if self._read_pending:
            for entry in self.bus.read_commands(self.site, 0, pending=True):
                self.commands.put(entry)
            self._read_pending = False
        block_ms = int(max(50, min(500, self.heartbeat_s * 250)))
        for entry in self.bus.read_commands(self.site, block_ms):
            self.commands.put(entry)
        self.connected = True

    def _heartbeat(self) -> None:
        with self._lock:
            beat = self._beat
        now = time.monotonic()
        if beat is None or now < self._next_beat:
            return
        fresh = beat.model_copy(update={"time": time.time()})
        self.bus.beat(self.site, fresh, liveness_ttl_s(self.heartbeat_s))
        self._next_beat = now + self.heartbeat_s
        with self._lock:
            status = self._status
        if status is not None:
            # Every heartbeat repeats the status: a control plane that started (or
            # whose Redis restarted) since the last change learns it within one beat.
            self.bus.publish_status(status)
            self._status_sent = status

    def _read_crl(self) -> None:
        now = time.monotonic()
        if now < self._next_crl:
            return
        self._next_crl = now + self.crl_poll_s
        pem = self.bus.read_crl()
        if pem is not None:
            self.on_crl(pem)

    def _flush(self) -> None:
        with self._lock:
            acks, self._acks = self._acks, []
            samples = list(self._telemetry)
            self._telemetry.clear()
            status = self._status
        try:
            for entry_id in acks:
                self.bus.ack_command(self.site, entry_id)
            self.bus.publish_telemetry(samples, self.telemetry_maxlen)
        except Exception:
            with self._lock:
                # Back in front of what came since; past the bound, the oldest go.
                self._acks = acks + self._acks
                self._telemetry = deque([*samples, *self._telemetry], maxlen=_BACKLOG)
            raise
        if status is not None and status is not self._status_sent:
            self.bus.publish_status(status)
            self._status_sent = status
