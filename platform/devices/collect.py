"""When a device round is over: sans-IO bookkeeping of the messages a round sent.

The round sends one message per device and then takes replies as they come. It is
complete when every device answered, or, at its deadline, when at least `min_replies`
did; below that minimum at the deadline it has failed. A reply to a message of an
earlier round, or a second reply to the same message, is dropped: nothing a device
sends is applied twice.
"""

from dataclasses import dataclass, field
from enum import Enum


class Offer(Enum):
    ACCEPTED = "accepted"
    LATE = "late"  # after the round closed
    DUPLICATE = "duplicate"  # this message was answered already
    UNKNOWN = "unknown"  # not a message this round sent


class State(Enum):
    COLLECTING = "collecting"
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass
class RoundCollector:
    server_round: int
    sent: dict[str, int]  # message id -> node id
    min_replies: int
    deadline: float  # on the driver's clock
    answered: dict[str, int] = field(default_factory=dict)
    closed: bool = False

    def __post_init__(self) -> None:
        if self.min_replies < 1:
            raise ValueError(f"min_replies must be >= 1, got {self.min_replies}")

    def offer(self, message_id: str) -> Offer:
        """A reply to `message_id` arrived: may it count in this round?"""
        if message_id not in self.sent:
            return Offer.UNKNOWN
        if self.closed:
            return Offer.LATE
        if message_id in self.answered:
            return Offer.DUPLICATE
        self.answered[message_id] = self.sent[message_id]
        return Offer.ACCEPTED

    def refuse(self, message_id: str) -> None:
        """An accepted reply failed its checks: it does not count towards the minimum."""
        self.answered[message_id] = -1  # answered: a second copy is still a duplicate

    @property
    def usable(self) -> int:
        return sum(1 for node in self.answered.values() if node >= 0)

    def state(self, now: float) -> State:
        """Complete, failed, or still collecting; the round closes once not collecting."""
        if self.closed:
            return State.COMPLETE if self.usable >= self.min_replies else State.FAILED
        everyone = len(self.answered) == len(self.sent)
        if everyone or now >= self.deadline:
            self.closed = True
            return State.COMPLETE if self.usable >= self.min_replies else State.FAILED
        return State.COLLECTING

    @property
    def pending(self) -> list[str]:
        return [m for m in self.sent if m not in self.answered]

    @property
    def silent_nodes(self) -> list[int]:
        return [self.sent[m] for m in self.pending]
