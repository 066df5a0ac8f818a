"""What this agent has applied, sans I/O: a command delivered twice is applied once.

The bus delivers at least once: a command can arrive again after the agent died
between applying and acknowledging it, or after the control plane issued it anew
(Redis restarted). The ledger remembers the last `capacity` command ids with their
outcome; the agent saves it before it acknowledges, so what it acknowledged is in it.
"""

from collections import OrderedDict
from typing import Any

from atoll.platform.bus.messages import AppliedCommand


class CommandLedger:
    def __init__(self, capacity: int = 1000) -> None:
        self.capacity = capacity
        self._applied: OrderedDict[str, AppliedCommand] = OrderedDict()
        self.duplicates = 0

    def seen(self, command_id: str) -> AppliedCommand | None:
        """The outcome if it was applied before (and counts the duplicate), else None."""
        found = self._applied.get(command_id)
        if found is not None:
            self.duplicates += 1
        return found

    def record(self, applied: AppliedCommand) -> None:
        self._applied[applied.id] = applied
        self._applied.move_to_end(applied.id)
        while len(self._applied) > self.capacity:
            self._applied.popitem(last=False)

    def recent(self, count: int = 50) -> list[AppliedCommand]:
        return list(self._applied.values())[-count:]

    def to_json(self) -> dict[str, Any]:
        return {
            "duplicates": self.duplicates,
            "applied": [a.model_dump(mode="json") for a in self._applied.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], capacity: int = 1000) -> "CommandLedger":
        ledger = cls(capacity)
        for item in data.get("applied", []):
            ledger.record(AppliedCommand.model_validate(item))
        ledger.duplicates = int(data.get("duplicates", 0))
        return ledger
