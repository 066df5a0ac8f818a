"""A peer process killed with SIGKILL and started again is a new incarnation: the
survivor reports it restarted, drops the old backlog, and the link resumes."""

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from integration.net.harness import SECRET, Net

from atoll.platform.net import Message, PeerConnected, PeerRestarted, SiteEndpoint

pytestmark = pytest.mark.integration

ECHO_SITE = Path(__file__).with_name("echo_site.py")


class EchoSite:
    """A site in its own process that sends back whatever it receives."""

    def __init__(self, site: str, directory: dict[str, str], options_json: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ECHO_SITE), site, json.dumps(directory), SECRET, options_json],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.lines: Iterator[str] = iter(self.process.stdout)
        self.ready = self.next_line()
        assert "ready" in self.ready, self.ready

    def next_line(self) -> dict:
        line = next(self.lines, "")
        if not line:
            raise AssertionError(f"the echo site exited with {self.process.wait(5)}")
        return json.loads(line)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no goodbye, its sockets die with it
        self.process.wait(10)


def echoes(net: Net, endpoint: SiteEndpoint, prefix: str, count: int) -> None:
    for i in range(count):
        endpoint.send(ECHO_PEER[endpoint.site], f"{prefix}{i}".encode())
    received, events = net.messages(endpoint, count)
    assert [m.payload.decode() for m in received] == [f"{prefix}{i}" for i in range(count)]
    assert not events


# the in-process site for each role of the killed one; `a` always dials `b`
IN_PROCESS = {"acceptor": "a", "dialer": "b"}
ECHO_PEER = {"a": "b", "b": "a"}


@pytest.mark.parametrize("killed_role", ["acceptor", "dialer"])
def test_a_killed_and_restarted_peer_is_reported_and_the_link_resumes(
    net: Net, killed_role: str
) -> None:
    directory = net.directory("a", "b")
    here = IN_PROCESS[killed_role]
    there = ECHO_PEER[here]
    echo = EchoSite(there, directory, net.options_json())
    endpoint = net.endpoint(here, directory)
    try:
        assert net.event(endpoint, PeerConnected)[0] == PeerConnected(there)
        assert echo.next_line() == {"event": "PeerConnected", "peer": here}
        echoes(net, endpoint, "before-", 300)

        for i in range(300):  # some of these are in flight when the peer dies
            endpoint.send(there, f"dying-{i}".encode())
        echo.kill()
        echo = EchoSite(there, directory, net.options_json())
        assert echo.ready != {"ready": endpoint.incarnation.hex()}

        restarted, before = net.event(endpoint, PeerRestarted, timeout=15)
        assert restarted.peer == there
        # what the old process echoed before dying: in order, once, and nothing else
        echoed = [m.payload.decode() for m in before if isinstance(m, Message)]
        assert echoed == [f"dying-{i}" for i in range(len(echoed))]
        # the unacknowledged backlog for the old process is gone (it may include messages
        # it received but had not acknowledged yet)
        assert restarted.dropped_messages <= 600
        assert endpoint.stats().links[there].queue_messages == 0
        # the new process knew nobody: to it this is a first connection
        assert echo.next_line() == {"event": "PeerConnected", "peer": here}

        echoes(net, endpoint, "after-", 300)  # nothing of the old backlog reaches it
        link = endpoint.stats().links[there]
        assert (link.restarts, link.state, link.duplicates_dropped) == (1, "up", 0)
    finally:
        echo.kill()
