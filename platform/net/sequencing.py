"""Exactly-once, in-order delivery over a chain of connections, sans I/O.

Each direction of a link numbers its messages 1, 2, 3, ... The sender keeps every
message until the receiver's cumulative ack covers it; after a reconnect the
receiver says how far it got and the sender resends from there. The receiver accepts
only the next number, so a resent message it already has is dropped, and a gap
(impossible when both sides follow these rules) is a protocol violation.

When the peer is a new process (new incarnation) both directions start again at 1:
`reset` drops what the old incarnation never acknowledged.
"""

from dataclasses import dataclass

from atoll.platform.net.errors import BadFrame
from atoll.platform.net.frames import DATA_HEADER_BYTES, encode_data


class OutboundWindow:
    """The sender's side: assigns sequence numbers and keeps messages until acknowledged.

    An urgent message overtakes the queued messages that have not been transmitted
    yet: they have never reached the peer, so renumbering them one up is safe.
    """

    def __init__(self) -> None:
        self._payloads: dict[int, bytes] = {}  # seq -> payload, unacknowledged
        self.acked_through = 0
        self.last_seq = 0
        self.unacked_bytes = 0  # DATA frames, headers included: what counts against the queue
        self._urgent_through = 0  # the last urgent message put ahead of the queue

    @property
    def unacked_count(self) -> int:
        return len(self._payloads)

    def add(self, payload: bytes) -> int:
        """Number a payload at the end of the queue and keep it."""
        self.last_seq += 1
        self._payloads[self.last_seq] = payload
        self.unacked_bytes += DATA_HEADER_BYTES + len(payload)
        return self.last_seq

    def add_urgent(self, payload: bytes, transmitted_through: int | None) -> int:
        """Number a payload ahead of every queued message after `transmitted_through`,
        behind earlier urgent ones: urgent messages keep their order among themselves.
        None (not connected: the peer may have any of them) puts it at the end."""
        if transmitted_through is None:
            transmitted_through = self.last_seq
        seq = max(transmitted_through, self.acked_through, self._urgent_through) + 1
        if seq > self.last_seq:
            seq = self.add(payload)
        else:
            for later in range(self.last_seq, seq - 1, -1):
                self._payloads[later + 1] = self._payloads[later]
            self._payloads[seq] = payload
            self.last_seq += 1
            self.unacked_bytes += DATA_HEADER_BYTES + len(payload)
        self._urgent_through = seq
        return seq

    def frame(self, seq: int) -> bytes:
        return encode_data(seq, self._payloads[seq])

    def frame_sizes_after(self, seq: int) -> list[int]:
        """The sizes of the frames still to transmit once everything through `seq` was."""
        first = max(seq, self.acked_through) + 1
        return [DATA_HEADER_BYTES + len(self._payloads[s]) for s in range(first, self.last_seq + 1)]

    def ack(self, through: int) -> int:
        """Release everything up to `through`; returns the bytes released."""
        if through > self.last_seq:
            raise BadFrame(f"ack for message {through}, but only {self.last_seq} were sent")
        released = 0
        for seq in range(self.acked_through + 1, through + 1):
            released += DATA_HEADER_BYTES + len(self._payloads.pop(seq))
        self.acked_through = max(self.acked_through, through)
        self.unacked_bytes -= released
        return released

    def resume_from(self, received_through: int) -> int:
        """The peer reconnected having received everything up to `received_through`;
        returns the sequence number after which to transmit again."""
        if received_through < self.acked_through:
            raise BadFrame(
                f"peer says it received up to {received_through}, "
                f"but it already acknowledged {self.acked_through}"
            )
        self.ack(received_through)
        return received_through

    def reset(self) -> tuple[int, int]:
        """Forget everything (the peer restarted); returns (messages, bytes) dropped."""
        dropped = (len(self._payloads), self.unacked_bytes)
        self._payloads.clear()
        self.acked_through = self.last_seq = self.unacked_bytes = self._urgent_through = 0
        return dropped


@dataclass
class InboundSequence:
    """The receiver's side: accepts each number once and in order, batches acks.

    An ack is due once `ack_every_messages` or `ack_every_bytes` arrived since the
    last one, or `ack_delay_s` after the first of them, or at once after a
    duplicate (the sender evidently missed an ack).
    """

    ack_every_messages: int
    ack_every_bytes: int
    ack_delay_s: float
    received_through: int = 0
    acked_through: int = 0  # the last cumulative ack handed out
    duplicates: int = 0
    _pending_bytes: int = 0
    _pending_since: float | None = None
    _ack_now: bool = False

    def accept(self, seq: int, nbytes: int, now: float) -> bool:
        """True when `seq` is new and must be delivered; False for a duplicate."""
        if seq <= self.received_through:
            self.duplicates += 1
            self._ack_now = True
            return False
        if seq != self.received_through + 1:
            raise BadFrame(f"message {seq} arrived after {self.received_through}: a gap")
        self.received_through = seq
        self._pending_bytes += nbytes
        if self._pending_since is None:
            self._pending_since = now
        return True

    def ack_deadline(self) -> float | None:
        """When the pending ack falls due at the latest (None: nothing to acknowledge)."""
        if self._ack_now:
            return float("-inf")
        if self._pending_since is None:
            return None
        pending = self.received_through - self.acked_through
        if pending >= self.ack_every_messages or self._pending_bytes >= self.ack_every_bytes:
            return float("-inf")
        return self._pending_since + self.ack_delay_s

    def ack_due(self, now: float) -> bool:
        deadline = self.ack_deadline()
        return deadline is not None and now >= deadline

    def take_ack(self) -> int:
        """The cumulative ack to send now; clears what was pending."""
        self.acked_through = self.received_through
        self._pending_bytes = 0
        self._pending_since = None
        self._ack_now = False
        return self.received_through

    def reset(self) -> None:
        self.received_through = self.acked_through = 0
        self._pending_bytes = 0
        self._pending_since = None
        self._ack_now = False
