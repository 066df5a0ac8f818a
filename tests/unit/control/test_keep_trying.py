"""The bus's retry loop: Redis counts as back only once a step goes through."""

import logging
import threading

import pytest

from atoll.platform.bus.connection import BusDown, keep_trying
from atoll.platform.net.backoff import Backoff


class Steps:
    """Fails `down_for` times, then succeeds until `total` steps, then stops the loop."""

    def __init__(self, stop: threading.Event, down_for: int, total: int) -> None:
        self.stop, self.down_for, self.total = stop, down_for, total
        self.calls = self.reconnects = 0

    def step(self) -> None:
        self.calls += 1
        if self.calls >= self.total:
            self.stop.set()
        if self.calls <= self.down_for:
            raise BusDown("Redis at redis://127.0.0.1:6379/0 is unreachable: refused")

    def reconnect(self) -> None:
        self.reconnects += 1


class RecordingBackoff(Backoff):
    def __init__(self) -> None:
        super().__init__(1e-4, 1.0)
        self.delays: list[float] = []

    def next_delay(self) -> float:
        self.delays.append(super().next_delay())
        return 0.0  # the test does not wait


def test_an_outage_is_logged_once_each_way_and_backs_off_while_it_lasts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = threading.Event()
    steps, backoff = Steps(stop, down_for=5, total=8), RecordingBackoff()
    with caplog.at_level(logging.WARNING, logger="atoll"):
        keep_trying(steps.step, stop, "dispatcher", steps.reconnect, backoff)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("unreachable" in m for m in messages) == 1
    assert messages.count("dispatcher: Redis is back") == 1
    assert backoff.delays == sorted(backoff.delays)  # growing
    assert len(backoff.delays) == 5
    assert backoff.failures == 0  # reset once a step went through
    assert steps.reconnects == 5  # before every step after the first failure
