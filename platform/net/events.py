"""What an endpoint hands the application: messages, link events, and counters.

Messages and events come out of one queue, in the order they happened: every
message received after a `PeerRestarted` comes from the peer's new process.
"""

from dataclasses import dataclass
from typing import Literal, NamedTuple


class Message(NamedTuple):
    """One payload from one peer; unpacks as `peer, payload = message`."""

    peer: str
    payload: bytes


@dataclass(frozen=True)
class PeerEvent:
    """What happened to the link to `peer`."""

    peer: str


@dataclass(frozen=True)
class PeerConnected(PeerEvent):
    """The link to `peer` is up: for the first time, or again after `PeerLost`."""


@dataclass(frozen=True)
class PeerLost(PeerEvent):
    """Nothing was heard from `peer` for longer than the lease. Messages sent to it stay
    queued (and block `send` once the queue is full) until it comes back."""

    silent_s: float


@dataclass(frozen=True)
class PeerRestarted(PeerEvent):
    """`peer` is a new process: it lost what it had received and the sequence state of
    both directions. Sequence numbers start again; the `dropped_messages` sent to the old
    process and never acknowledged were discarded. Resynchronise that peer now. The link
    is up again (no `PeerConnected` follows)."""

    dropped_messages: int


LinkEvent = PeerConnected | PeerLost | PeerRestarted
Received = Message | LinkEvent

LinkState = Literal["connecting", "up", "reconnecting", "lost", "closed"]


@dataclass(frozen=True)
class LinkStats:
    peer: str
    state: LinkState
    bytes_sent: int  # written to the transport: frames, WebSocket framing, handshakes
    bytes_received: int  # read from the transport, the same way
    messages_sent: int  # DATA frames written, resends included
    messages_resent: int
    messages_acked: int
    messages_received: int  # delivered to the application, each exactly once
    duplicates_dropped: int
    queue_bytes: int  # queued or unacknowledged outgoing frames, against `queue_bytes`
    queue_messages: int
    # Seconds the link needs to carry what is on it and queued for it: the same measure
    # as the simulator's, so a policy sees congestion alike in both (0 when unshaped).
    backlog_s: float
    connections: int  # sessions established (handshake completed)
    reconnects: int  # sessions established after the first
    restarts: int  # times the peer came back as a new process
    auth_failures: int  # bad proofs and refused TLS certificates, either side's
    refused: int  # authentic connections turned away (already connected, wrong dialer, ...)
    bad_frames: int  # connections closed because the peer broke the protocol
    last_error: str | None


@dataclass(frozen=True)
class EndpointStats:
    site: str
    links: dict[str, LinkStats]
    strangers_refused: int  # connections that never named a known site and proved it
    stranger_bytes_received: int
