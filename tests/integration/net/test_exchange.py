"""Endpoints on loopback deliver every message exactly once, in order, and count the
bytes that actually cross the socket."""

import threading
import time

import pytest
from integration.net.harness import Net

from atoll.platform.net import (
    EndpointClosed,
    LinkOptions,
    Message,
    MessageTooLarge,
    PeerConnected,
    UnknownPeer,
)
from atoll.platform.net.frames import ACK_BYTES, DATA_HEADER_BYTES, wire_bytes

pytestmark = pytest.mark.integration


def payload(sender: str, index: int) -> bytes:
    return f"{sender}:{index}:".encode() + bytes(index % 251)


def assert_in_order(messages: list[Message], sender: str, count: int) -> None:
    assert [m.payload for m in messages if m.peer == sender] == [
        payload(sender, i) for i in range(count)
    ]


def test_two_sites_exchange_thousands_of_messages_both_ways(net: Net) -> None:
    directory = net.directory("a", "b")
    a, b = net.endpoint("a", directory), net.endpoint("b", directory)
    count = 3000
    senders = [
        threading.Thread(
            target=lambda e=e, to=to: [e.send(to, payload(e.site, i)) for i in range(count)]
        )
        for e, to in ((a, "b"), (b, "a"))
    ]
    for thread in senders:
        thread.start()
    at_a, events_a = net.messages(a, count)
    at_b, events_b = net.messages(b, count)
    for thread in senders:
        thread.join()
    assert_in_order(at_a, "b", count)
    assert_in_order(at_b, "a", count)
    assert events_a == [PeerConnected("b")]
    assert events_b == [PeerConnected("a")]
    assert a.receive(timeout=0.2) is None  # and nothing twice
    link = a.stats().links["b"]
    assert (link.messages_received, link.duplicates_dropped, link.reconnects) == (count, 0, 0)


def test_three_sites_each_send_to_both_others(net: Net) -> None:
    directory = net.directory("a", "b", "c")
    sites = {name: net.endpoint(name, directory) for name in directory}
    count = 1500

    def send_all(site: str) -> None:
        for i in range(count):
            for peer in sites[site].peers:
                sites[site].send(peer, payload(site, i))

    threads = [threading.Thread(target=send_all, args=(name,)) for name in sites]
    for thread in threads:
        thread.start()
    for endpoint in sites.values():
        received, _ = net.messages(endpoint, 2 * count)
        for sender in endpoint.peers:
            assert_in_order(received, sender, count)
    for thread in threads:
        thread.join()


def test_byte_counters_are_what_crossed_the_socket(net: Net) -> None:
    # A long lease keeps heartbeats out of the window being measured.
    options = LinkOptions(lease_s=30.0, backoff_initial_s=0.02, backoff_max_s=0.2)
    directory = net.directory("a", "b")
    a = net.endpoint("a", directory, options=options)
    b = net.endpoint("b", directory, options=options)
    a.wait_connected(timeout=5)
    b.wait_connected(timeout=5)
    before_a, before_b = a.stats().links["b"], b.stats().links["a"]
    # sizes either side of WebSocket's 126- and 65536-byte header steps
    sizes = [0, 1, 116, 117, 1000, 65526, 65527, 200_000] * 25
    for size in sizes:
        a.send("b", bytes(size))
    net.messages(b, len(sizes))
    deadline = time.monotonic() + 5
    while a.stats().links["b"].queue_messages and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # the last ack is on its way
    after_a, after_b = a.stats().links["b"], b.stats().links["a"]

    sent = after_a.bytes_sent - before_a.bytes_sent
    # a dialed, so every frame it writes carries a WebSocket mask
    assert sent == sum(wire_bytes(DATA_HEADER_BYTES + size, masked=True) for size in sizes)
    assert sent == after_b.bytes_received - before_b.bytes_received
    acks = after_b.bytes_sent - before_b.bytes_sent
    assert acks == after_a.bytes_received - before_a.bytes_received
    ack_bytes = wire_bytes(ACK_BYTES, masked=False)
    assert acks % ack_bytes == 0
    assert 1 <= acks // ack_bytes <= len(sizes)
    assert after_a.queue_bytes == 0
    assert after_a.messages_acked == len(sizes)


def test_misuse_raises_link_errors(net: Net) -> None:
    directory = net.directory("a", "b")
    a = net.endpoint("a", directory, options=LinkOptions(max_message_bytes=1000, queue_bytes=4096))
    with pytest.raises(UnknownPeer, match="'c' is not a peer of 'a'"):
        a.send("c", b"x")
    with pytest.raises(MessageTooLarge, match="1001 bytes"):
        a.send("b", bytes(1001))
    a.close(flush_timeout_s=0)
    with pytest.raises(EndpointClosed):
        a.send("b", b"x")
