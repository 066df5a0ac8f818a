"""A site's progress from its run log, sans I/O.

`atoll site run` appends one JSON event per line to log.jsonl, and a resumed run
appends to the same file, so replaying the file from the start always gives the
same answer: an agent that restarts rebuilds its view from the log alone. Byte and
stall counters start again in each incarnation of the site (a `started` event each);
the totals add up every incarnation.
"""

from dataclasses import dataclass, field
from typing import Any, Literal

Sample = Literal["step", "eval", "geo", "end"]


@dataclass
class SiteProgress:
    incarnation: int = 0
    clock: int = 0
    total_clocks: int | None = None
    loss: float | None = None
    accuracy: float | None = None
    final_accuracy: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    completed: bool = False  # trained to the end (not stopped early)
    failure: str | None = None
    _bytes: dict[tuple[int, int, int], int] = field(default_factory=dict)
    _stall: dict[tuple[int, int, int], float] = field(default_factory=dict)

    @property
    def wan_bytes(self) -> int:
        return sum(self._bytes.values())

    @property
    def stall_s(self) -> float:
        """Seconds the site waited on the others: per incarnation its slowest shard's wait."""
        longest: dict[int, float] = {}
        for (incarnation, _, _), stall in self._stall.items():
            longest[incarnation] = max(longest.get(incarnation, 0.0), stall)
        return sum(longest.values())

    def apply(self, event: dict[str, Any]) -> Sample | None:
        """Take one log event; returns the kind of telemetry sample it is worth, if any."""
        handle = getattr(self, f"_on_{event.get('kind')}", None)
        return None if handle is None else handle(event)

    def _on_started(self, event: dict[str, Any]) -> None:
        self.incarnation += 1
        self.clock = event["step"]
        self.total_clocks = event["total_steps"]
        if self.started_at is None:
            self.started_at = event["time"]
        self.failure = None

    def _on_step(self, event: dict[str, Any]) -> Sample:
        self.clock = event["step"]
        self.loss = event["loss"]
        return "step"

    def _on_eval(self, event: dict[str, Any]) -> Sample:
        self.accuracy = event["test_accuracy"]
        return "eval"

    def _on_geo(self, event: dict[str, Any]) -> Sample:
        key = (self.incarnation, event["rank"], event["shard"])
        self._bytes[key] = event["bytes_sent"]
        self._stall[key] = event.get("stall_s", 0.0)
        return "geo"

    def _on_finished(self, event: dict[str, Any]) -> Sample:
        self.clock = event["step"]
        self.finished_at = event["time"]
        self.completed = not event["stopped"]
        if self.completed:
            self.final_accuracy = self.accuracy = event["test_accuracy"]
        return "end"

    def _on_failed(self, event: dict[str, Any]) -> Sample:
        self.failure = event.get("message", "the site failed")
        return "end"
