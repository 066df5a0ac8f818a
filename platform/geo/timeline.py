"""Accuracy over time across sites: what both runtimes report and the bench compares.

Each site evaluates its replica every `eval_every` clocks and reports (clock,
accuracy, time). A clock's point is complete once every site has reported it: its
accuracy is the mean over sites and its time is when the last site got there.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Point:
    clock: int
    time_s: float
    mean_accuracy: float
    min_accuracy: float
    wan_bytes: int  # sent over every link by the time the last site got there


@dataclass
class AccuracyTimeline:
    sites: int
    _reports: dict[int, dict[int, tuple[float, float, int]]] = field(default_factory=dict)
    points: list[Point] = field(default_factory=list)

    def report(
        self, site: int, clock: int, accuracy: float, time_s: float, wan_bytes: int
    ) -> Point | None:
        """Record one site's evaluation; returns the clock's point once it is complete."""
        at_clock = self._reports.setdefault(clock, {})
        at_clock[site] = (accuracy, time_s, wan_bytes)
        if len(at_clock) < self.sites:
            return None
        accuracies = [a for a, _, _ in at_clock.values()]
        last = max(at_clock.values(), key=lambda r: r[1])
        point = Point(clock, last[1], sum(accuracies) / len(accuracies), min(accuracies), last[2])
        del self._reports[clock]
        self.points.append(point)
        self.points.sort(key=lambda p: p.clock)
        return point

    def first_reaching(self, target: float) -> Point | None:
        return next((p for p in self.points if p.mean_accuracy >= target), None)
