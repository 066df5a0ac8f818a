"""Tuning of an endpoint's links: queue bounds, acks, liveness, reconnects."""

from dataclasses import dataclass

from atoll.platform.net.errors import LinkError
from atoll.platform.net.frames import DATA_HEADER_BYTES


@dataclass(frozen=True)
class LinkOptions:
    # Per link: outgoing frames queued or awaiting an ack. `send` blocks beyond it. Over
    # a shaped link it must exceed bandwidth x round trip or the link cannot fill.
    queue_bytes: int = 64 * 2**20
    max_message_bytes: int = 32 * 2**20
    # Per endpoint: received messages the application has not taken yet. When full the
    # endpoint stops reading, so TCP and then the senders' queues push back.
    inbox_bytes: int = 256 * 2**20
    # A peer silent this long is reported lost (and its connection dropped). It must
    # exceed the time the largest message takes to cross the slowest link.
    lease_s: float = 10.0
    heartbeat_s: float | None = None  # an idle link sends a heartbeat this often; lease/4
    ack_delay_s: float = 0.02
    ack_every_messages: int = 64
    ack_every_bytes: int = 256 * 2**10
    handshake_timeout_s: float = 5.0
    backoff_initial_s: float = 0.05
    backoff_max_s: float = 5.0
    # When an authenticated site connects while its old connection still looks up, the
    # old one is pinged for this long: a reply means a second process with that name.
    probe_timeout_s: float = 1.0

    def __post_init__(self) -> None:
        if self.max_message_bytes < 1:
            raise LinkError("max_message_bytes must be positive")
        if self.queue_bytes < self.max_message_bytes + DATA_HEADER_BYTES:
            raise LinkError("queue_bytes must hold at least one message of max_message_bytes")
        if self.inbox_bytes < 1:
            raise LinkError("inbox_bytes must be positive")
        if not 0 < self.heartbeat_interval_s < self.lease_s:
            raise LinkError("the heartbeat must be positive and shorter than the lease")
        if min(self.ack_delay_s, self.handshake_timeout_s, self.probe_timeout_s) <= 0:
            raise LinkError("timeouts and the ack delay must be positive")
        if self.ack_every_messages < 1 or self.ack_every_bytes < 1:
            raise LinkError("ack thresholds must be positive")
        if self.probe_timeout_s >= self.handshake_timeout_s:
            raise LinkError("the probe of an old connection must fit in the handshake timeout")
        if not 0 < self.backoff_initial_s <= self.backoff_max_s:
            raise LinkError("backoff needs 0 < backoff_initial_s <= backoff_max_s")

    @property
    def heartbeat_interval_s(self) -> float:
        return self.heartbeat_s if self.heartbeat_s is not None else self.lease_s / 4
