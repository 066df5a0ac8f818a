import threading
import time

import pytest

from atoll.registry.core.periodic import Periodic


def test_the_task_runs_every_interval_in_its_thread_until_closed() -> None:
    ran = threading.Semaphore(0)
    names: list[str] = []

    def task() -> None:
        names.append(threading.current_thread().name)
        ran.release()

    periodic = Periodic("every-10-ms", 0.01, task).start()
    assert all(ran.acquire(timeout=5) for _ in range(3))  # again and again
    periodic.close()
    count = len(names)
    time.sleep(0.05)  # five intervals
    assert len(names) == count  # closed: no more runs
    assert set(names) == {"every-10-ms"}


def test_closing_before_the_first_interval_runs_nothing() -> None:
    calls: list[int] = []
    periodic = Periodic("hourly", 3600, lambda: calls.append(1)).start()
    periodic.close(timeout_s=5)
    assert calls == []


def test_first_runs_before_the_thread_and_its_failure_reaches_the_caller() -> None:
    calls: list[str] = []
    periodic = Periodic("hourly", 3600, lambda: calls.append("task"))
    periodic.start(first=lambda: calls.append("first")).close(timeout_s=5)
    assert calls == ["first"]

    def broken() -> None:
        raise RuntimeError("no database")

    again = Periodic("hourly", 3600, lambda: None)
    with pytest.raises(RuntimeError, match="no database"):
        again.start(first=broken)
    assert again._thread is None  # no thread started
