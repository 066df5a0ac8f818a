"""Connections that break under a running stream: nothing is lost or duplicated, and a
peer that falls silent is reported lost, then found again."""

import dataclasses
import threading
import time
from urllib.parse import urlsplit

import pytest
from integration.net.harness import FAST, Net, TcpProxy

from atoll.platform.net import LinkOptions, LinkShape, PeerConnected, PeerLost, SiteEndpoint

pytestmark = pytest.mark.integration

# Slow enough that a few thousand messages are still in flight when the proxy cuts.
LINK = LinkShape(latency_s=0.005, bandwidth_bps=5e6)


def a_dials_b_through_a_proxy(
    net: Net, options: LinkOptions = FAST
) -> tuple[SiteEndpoint, SiteEndpoint, TcpProxy]:
    directory = net.directory("a", "b")
    b_port = urlsplit(directory["b"]).port
    assert b_port is not None
    proxy = net.proxy(b_port)
    a_view = {**directory, "b": f"ws://127.0.0.1:{proxy.port}"}
    a = net.endpoint("a", a_view, shapes={"b": LINK}, options=options)
    b = net.endpoint("b", directory, shapes={"a": LINK}, options=options)
    return a, b, proxy


def test_cut_connections_lose_and_duplicate_nothing(net: Net) -> None:
    a, b, proxy = a_dials_b_through_a_proxy(net)
    a.wait_connected(timeout=5)
    count = 4000

    def stream(endpoint: SiteEndpoint, peer: str) -> None:
        for i in range(count):
            endpoint.send(peer, i.to_bytes(4, "big") + bytes(100))

    senders = [threading.Thread(target=stream, args=pair) for pair in ((a, "b"), (b, "a"))]
    for thread in senders:
        thread.start()
    cuts = 0
    for _ in range(4):
        time.sleep(0.2)
        cuts += proxy.cut()  # resets both TCP connections of every session through it
    at_a, _ = net.messages(a, count, timeout=30)
    at_b, _ = net.messages(b, count, timeout=30)
    for thread in senders:
        thread.join()

    for received in (at_a, at_b):
        assert [int.from_bytes(m.payload[:4], "big") for m in received] == list(range(count))
    assert cuts >= 3, "the stream ended before the proxy could cut it"
    link_a, link_b = a.stats().links["b"], b.stats().links["a"]
    assert link_a.reconnects >= cuts
    assert link_b.reconnects >= cuts
    # frames written but unacknowledged when a connection died went out again
    assert link_a.messages_resent + link_b.messages_resent > 0
    assert a.receive(timeout=0.2) is None
    assert b.receive(timeout=0) is None


def test_a_silent_peer_is_lost_after_the_lease_and_found_again(net: Net) -> None:
    options = dataclasses.replace(FAST, lease_s=1.0)
    a, b, proxy = a_dials_b_through_a_proxy(net, options)
    a.wait_connected(timeout=5)
    assert net.event(a, PeerConnected)[0] == PeerConnected("b")
    assert net.event(b, PeerConnected)[0] == PeerConnected("a")

    proxy.freeze()  # connections stay open; nothing gets through (a partition)
    frozen_at = time.monotonic()
    for i in range(50):
        a.send("b", i.to_bytes(4, "big"))
    lost_at_a, _ = net.event(a, PeerLost, timeout=5)
    lost_after = time.monotonic() - frozen_at
    lost_at_b, _ = net.event(b, PeerLost, timeout=5)
    assert lost_at_a.peer == "b"
    assert lost_at_b.peer == "a"
    # heard last at most a heartbeat (lease/4) before the freeze; checked every lease/8
    assert 0.7 <= lost_after <= 1.6, lost_after
    assert a.stats().links["b"].state == "lost"

    proxy.thaw()
    assert net.event(a, PeerConnected, timeout=10)[0] == PeerConnected("b")
    received, events = net.messages(b, 50)
    assert [int.from_bytes(m.payload, "big") for m in received] == list(range(50))
    assert events == [PeerConnected("a")]
    assert b.receive(timeout=0.2) is None
