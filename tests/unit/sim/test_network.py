import pytest

from atoll.platform.geo.messages import Lane
from atoll.platform.net.frames import DATA_HEADER_BYTES, wire_bytes
from atoll.platform.net.topology import LinkShape
from atoll.platform.sim.events import EventQueue
from atoll.platform.sim.network import SimulatedLink

SHAPE = LinkShape(latency_s=0.05, bandwidth_bps=8e6)  # 1 MB/s: 1,000 bytes take 1 ms


def payload_for(on_wire: int) -> int:
    """The message size whose frame costs `on_wire` bytes on an unmasked link."""
    size = on_wire - DATA_HEADER_BYTES
    while wire_bytes(DATA_HEADER_BYTES + size, masked=False) > on_wire:
        size -= 1
    return size


def link_with_log() -> tuple[SimulatedLink, EventQueue, list[tuple[str, float]]]:
    events = EventQueue()
    arrivals: list[tuple[str, float]] = []
    link = SimulatedLink(SHAPE, events, lambda payload, now: arrivals.append((payload, now)))
    return link, events, arrivals


def run(events: EventQueue) -> None:
    while events.run_next():
        pass


def test_an_idle_link_delivers_after_serialisation_and_latency() -> None:
    link, events, arrivals = link_with_log()
    nbytes = payload_for(1000)
    link.send("a", nbytes, Lane.BULK, 0.0)
    run(events)
    assert arrivals == [("a", pytest.approx(0.001 + 0.05))]
    assert link.bytes_sent == 1000
    assert link.frames_sent == 1
    assert SHAPE.transfer_s(1000) == pytest.approx(arrivals[0][1])


def test_frames_queue_behind_each_other_and_pipeline() -> None:
    link, events, arrivals = link_with_log()
    for name in "abc":
        link.send(name, payload_for(10_000), Lane.BULK, 0.0)
    assert link.backlog_s(0.0) == pytest.approx(0.03)
    run(events)
    assert [name for name, _ in arrivals] == ["a", "b", "c"]
    assert [t for _, t in arrivals] == pytest.approx([0.06, 0.07, 0.08])


def test_control_frames_overtake_queued_bulk_but_not_the_frame_on_the_wire() -> None:
    link, events, arrivals = link_with_log()
    link.send("bulk-1", payload_for(10_000), Lane.BULK, 0.0)
    link.send("bulk-2", payload_for(10_000), Lane.BULK, 0.0)
    link.send("tick", payload_for(100), Lane.CONTROL, 0.001)
    run(events)
    assert [name for name, _ in arrivals] == ["bulk-1", "tick", "bulk-2"]
    assert arrivals[1][1] == pytest.approx(0.0101 + 0.05)


def test_a_dialing_link_pays_the_websocket_mask() -> None:
    events = EventQueue()
    masked = SimulatedLink(SHAPE, events, lambda payload, now: None, masked=True)
    masked.send("a", payload_for(1000), Lane.BULK, 0.0)
    assert masked.bytes_sent == 1004


def test_a_link_that_went_idle_starts_again_at_once() -> None:
    link, events, arrivals = link_with_log()
    link.send("a", payload_for(1000), Lane.BULK, 0.0)
    run(events)
    events.at(1.0, lambda now: link.send("b", payload_for(1000), Lane.BULK, now))
    run(events)
    assert arrivals[1][1] == pytest.approx(1.051)
