"""Liveness, sans I/O: when a site counts as online, and when that changes.

An agent sets its liveness key every heartbeat with a time to live of `TTL_BEATS`
heartbeats (`atoll.platform.bus.keys`). One missed beat is forgiven (a slow disk, a GC
pause); two are not: a silent site is offline at most two heartbeat intervals after its
last beat, and online again with the first beat after it returns.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Transition:
    site: str
    online: bool
    at: float  # when it was observed


@dataclass
class LivenessBoard:
    """What the control plane last saw of each site, fed with the keys it reads."""

    online: dict[str, bool] = field(default_factory=dict)
    last_beat: dict[str, float] = field(default_factory=dict)

    def observe(self, beats: dict[str, float | None], now: float) -> list[Transition]:
        """`beats`: site -> time of its last heartbeat, or None when its key lapsed.
        Returns the sites whose state changed (a site seen for the first time too)."""
        changes = []
        for site, beat in beats.items():
            alive = beat is not None
            if beat is not None:
                self.last_beat[site] = beat
            if self.online.get(site) != alive:
                self.online[site] = alive
                changes.append(Transition(site, alive, now))
        return changes

    def forget(self, site: str) -> None:
        self.online.pop(site, None)
        self.last_beat.pop(site, None)
