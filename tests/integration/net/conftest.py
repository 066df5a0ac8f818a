"""The `net` fixture: endpoints and proxies that are closed when the test ends."""

from collections.abc import Iterator

import pytest
from integration.net.harness import Net


@pytest.fixture
def net() -> Iterator[Net]:
    harness = Net()
    try:
        yield harness
    finally:
        harness.close()
