import heapq
import itertools
from collections.abc import Callable

Action = Callable[[float], None]


class EventQueue:
    """Actions at virtual times; ties run in the order they were scheduled."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Action]] = []
        self._order = itertools.count()

    def at(self, time: float, action: Action) -> None:
        if time < self.now:
            raise ValueError(f"cannot schedule at {time}, before now ({self.now})")
        heapq.heappush(self._heap, (time, next(self._order), action))

    def run_next(self) -> bool:
        if not self._heap:
            return False
        self.now, _, action = heapq.heappop(self._heap)
        action(self.now)
        return True
