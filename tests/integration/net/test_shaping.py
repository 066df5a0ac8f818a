"""Shaped links deliver when `LinkShape` says they should, and a full queue pushes back
on `send` instead of growing."""

import dataclasses
import threading
import time

import pytest
from integration.net.harness import FAST, Net

from atoll.platform.net import LinkShape, Message, SendTimeout, SiteEndpoint
from atoll.platform.net.frames import DATA_HEADER_BYTES, wire_bytes

pytestmark = pytest.mark.integration

WAN = LinkShape(latency_s=0.050, bandwidth_bps=20e6)
TOLERANCE = 0.15
# Beyond the link model, a delivery waits for a few thread hand-offs under one GIL:
# the sender's event loop, the receiver's, the test thread.
HANDOFF_S = 0.005
# A busy machine can only delay a delivery, so the best of a few trials is the one to
# hold against the model; every trial must respect its lower bound.
TRIALS = 3


def assert_matches_model(trials: list[float], expected: float) -> None:
    # never early: the shaper holds every frame until the model says it arrives
    assert min(trials) >= expected - 0.001, (trials, expected)
    assert min(trials) <= expected * (1 + TOLERANCE) + HANDOFF_S, (trials, expected)


def shaped_pair(net: Net, shape: LinkShape, **kwargs: object) -> tuple[SiteEndpoint, SiteEndpoint]:
    directory = net.directory("a", "b")
    a = net.endpoint("a", directory, shapes={"b": shape}, **kwargs)  # type: ignore[arg-type]
    b = net.endpoint("b", directory, shapes={"a": shape}, **kwargs)  # type: ignore[arg-type]
    a.wait_connected(timeout=5)
    b.wait_connected(timeout=5)
    a.receive_all()
    b.receive_all()
    return a, b


def on_the_wire(payload_bytes: int) -> int:
    return wire_bytes(DATA_HEADER_BYTES + payload_bytes, masked=True)  # a dials, so masks


def arrivals(a: SiteEndpoint, b: SiteEndpoint, sizes: list[int]) -> list[float]:
    """Send `sizes` from a to b over an idle link; when each arrived, from the first send."""
    time.sleep(0.1)  # let acks and heartbeats clear: an idle link
    started = time.monotonic()
    for size in sizes:
        a.send("b", bytes(size))
    times = []
    for _ in sizes:
        assert isinstance(b.receive(timeout=5), Message)
        times.append(time.monotonic() - started)
    return times


def test_one_message_takes_latency_plus_serialisation(net: Net) -> None:
    a, b = shaped_pair(net, WAN)
    for size in (1_000, 100_000, 1_000_000):
        trials = [arrivals(a, b, [size])[0] for _ in range(TRIALS)]
        assert_matches_model(trials, WAN.transfer_s(on_the_wire(size)))


def test_a_stream_pipelines_at_the_link_bandwidth(net: Net) -> None:
    a, b = shaped_pair(net, WAN)
    sizes = [50_000] * 25  # 1.25 MB: 0.5 s at 20 Mbps
    trials = [arrivals(a, b, sizes) for _ in range(2)]
    # message k arrives once k messages were serialised, plus one latency (not k latencies)
    for k in (1, len(sizes) // 4, len(sizes) // 2, len(sizes)):
        expected = WAN.latency_s + 8 * sum(map(on_the_wire, sizes[:k])) / WAN.bandwidth_bps
        assert_matches_model([trial[k - 1] for trial in trials], expected)


def test_a_slow_link_with_a_small_queue_blocks_send(net: Net) -> None:
    slow = LinkShape(latency_s=0.010, bandwidth_bps=8e6)  # 1 MB/s
    queue = 32 * 1024
    options = dataclasses.replace(FAST, queue_bytes=queue, max_message_bytes=4096)
    a, b = shaped_pair(net, slow, options=options)
    size, count = 4000, 100
    depths = []
    started = time.monotonic()
    for i in range(count):
        a.send("b", i.to_bytes(4, "big") + bytes(size - 4))
        depths.append(a.stats().links["b"].queue_bytes)
    blocked_for = time.monotonic() - started
    # the queue never held more than its bound, so send waited for the link
    assert max(depths) <= queue
    must_wait = 8 * (count * on_the_wire(size) - queue) / slow.bandwidth_bps
    assert blocked_for >= 0.9 * must_wait, (blocked_for, must_wait)
    with pytest.raises(SendTimeout, match="queue to 'b' stayed full"):
        for _ in range(10):  # the queue is full right now; this cannot wait 20 ms
            a.send("b", bytes(size), timeout=0.02)
    received, _ = net.messages(b, count)
    assert [int.from_bytes(m.payload[:4], "big") for m in received] == list(range(count))


def test_a_receiver_that_stops_reading_stops_the_sender(net: Net) -> None:
    # b takes nothing out of its inbox: its inbox fills, it stops reading and acking,
    # and a's queue fills; memory on both sides stays within the two bounds.
    limit = 64 * 1024
    directory = net.directory("a", "b")
    options = dataclasses.replace(
        FAST, queue_bytes=limit, inbox_bytes=limit, max_message_bytes=2048
    )
    a = net.endpoint("a", directory, options=options)
    b = net.endpoint("b", directory, options=options)
    a.wait_connected(timeout=5)
    sent = 0
    with pytest.raises(SendTimeout):
        while sent < 10_000:
            a.send("b", sent.to_bytes(4, "big") + bytes(1020), timeout=0.5)
            sent += 1
    frame = DATA_HEADER_BYTES + 1024
    assert limit // frame <= sent <= 2 * limit // frame + 2
    assert a.stats().links["b"].queue_bytes > limit - frame

    got: list[int] = []
    sender = threading.Thread(
        target=lambda: [a.send("b", i.to_bytes(4, "big")) for i in range(sent, sent + 200)]
    )
    sender.start()  # reading again releases the sender
    received, _ = net.messages(b, sent + 200)
    sender.join()
    got = [int.from_bytes(m.payload[:4], "big") for m in received]
    assert got == list(range(sent + 200))


def test_backlog_is_the_serialisation_still_ahead(net: Net) -> None:
    slow = LinkShape(latency_s=0.010, bandwidth_bps=8e6)  # 1 MB/s
    a, b = shaped_pair(net, slow)
    time.sleep(0.1)
    assert a.stats().links["b"].backlog_s == 0.0  # idle
    sizes = [100_000] * 5
    for size in sizes:
        a.send("b", bytes(size))
    backlog = a.stats().links["b"].backlog_s
    whole = 8 * sum(map(on_the_wire, sizes)) / slow.bandwidth_bps  # 0.5 s
    assert whole - 0.05 <= backlog <= whole + 0.001, (backlog, whole)
    net.messages(b, len(sizes))
    assert a.stats().links["b"].backlog_s == 0.0  # all carried; latency is not backlog


def test_an_urgent_message_overtakes_queued_bulk_data(net: Net) -> None:
    slow = LinkShape(latency_s=0.010, bandwidth_bps=8e6)  # 0.1 s per bulk message
    a, b = shaped_pair(net, slow)
    for i in range(5):
        a.send("b", b"bulk%d" % i + bytes(100_000))
    a.send("b", b"clock", urgent=True)
    received, _ = net.messages(b, 6)
    order = [m.payload[:5] for m in received]
    # only what was already on the wire goes first; the rest keeps its order behind it
    assert order.index(b"clock") <= 1, order
    assert [p for p in order if p != b"clock"] == [b"bulk%d" % i for i in range(5)]
