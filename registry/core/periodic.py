"""A task that a thread of its own runs every so often until closed: how the registry's
caches follow the database (the neighbour snapshot, the token revocation counts)."""

import threading
from collections.abc import Callable


class Periodic:
    def __init__(self, name: str, interval_s: float, task: Callable[[], None]) -> None:
        """`task` handles its own failures: one that raises ends the thread."""
        self.name, self.interval_s, self.task = name, interval_s, task
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, first: Callable[[], None] | None = None) -> "Periodic":
        """`first`, if given, runs here before the thread starts (what it raises, the
        caller gets): a cache loads once before it serves, then follows."""
        if first is not None:
            first()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def close(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.task()
