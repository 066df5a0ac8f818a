"""Fixtures of the integration tests."""

from collections.abc import Iterator

import pytest
from integration.control.harness import scratch_bus, shared_redis_url

from atoll.platform.bus.connection import Bus


@pytest.fixture
def bus() -> Iterator[Bus]:
    """A bus on the shared Redis, under a key prefix of the test's own."""
    with scratch_bus(shared_redis_url()) as scratch:
        yield scratch
