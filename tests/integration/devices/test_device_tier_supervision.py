"""The edge agent's device tier: it starts the site's SuperLink, starts it again when it
dies, and stops it (with what it started) on the way out."""

import os
import signal
import socket
from pathlib import Path

import pytest

from atoll.edge.devices import DevicesConfig, DeviceTier

pytestmark = [pytest.mark.integration, pytest.mark.flower, pytest.mark.timeout(300)]

EXAMPLE = Path(__file__).parents[3] / "examples" / "fashion-mnist-flower"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_superlink_is_started_restarted_and_stopped(tmp_path: Path) -> None:
    port = free_port()
    tier = DeviceTier(DevicesConfig(app=EXAMPLE, host="127.0.0.1", port=port), tmp_path)
    try:
        tier.start()
        assert listening(port)
        first = tier.site._superlink
        assert first is not None
        os.killpg(first.pid, signal.SIGKILL)  # the SuperLink dies
        first.wait()
        tier.supervise()
        assert tier.restarts == 1
        assert tier.site.superlink_alive() and tier.site._superlink is not first
        assert listening(port)
        assert (tmp_path / "devices" / "flower.db").exists()  # its state is on disk
    finally:
        tier.stop()
    assert not tier.site.superlink_alive()
    assert not listening(port)
