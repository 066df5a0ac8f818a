"""When a command goes on the bus (again), sans I/O.

Commands live in SQL until their agent reports them applied. One is published when
it is new; again when Redis restarted since (its stream went with it: the epoch, the
Redis run id, differs); and again when its site is online yet has not applied it for
`retry_s` (its entry was trimmed, or its group was made anew after it). A command
published twice is applied once: the agent remembers what it applied.
"""

from dataclasses import dataclass

from atoll.platform.control.states import CommandState

OPEN = CommandState.issued  # the one state in which a command is (re)published


@dataclass(frozen=True)
class Delivery:
    state: CommandState
    published_epoch: str | None
    published_at: float | None


@dataclass(frozen=True)
class DeliveryPolicy:
    retry_s: float = 60.0

    def due(self, command: Delivery, epoch: str, now: float, site_online: bool | None) -> bool:
        if command.state != OPEN:
            return False
        if command.published_epoch is None or command.published_at is None:
            return True
        if command.published_epoch != epoch:
            return True
        return site_online is True and now - command.published_at >= self.retry_s
