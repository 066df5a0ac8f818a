import pytest

from atoll.platform.net.shaping import Departure, LinkShaper, outgoing_shapes
from atoll.platform.net.topology import LinkShape, load_topology

WAN = LinkShape(latency_s=0.05, bandwidth_bps=20e6)


def test_an_idle_link_delivers_in_exactly_transfer_s() -> None:
    for nbytes in (0, 1, 1500, 1_000_000):
        departure = LinkShaper(WAN).schedule(nbytes, now=10.0)
        assert departure.arrive_s - 10.0 == pytest.approx(WAN.transfer_s(nbytes))


def test_frames_queue_behind_each_other_and_pipeline() -> None:
    shaper = LinkShaper(WAN)
    first = shaper.schedule(250_000, now=0.0)  # 0.1 s on the wire
    second = shaper.schedule(250_000, now=0.0)
    assert first == Departure(start_s=0.0, free_s=pytest.approx(0.1), arrive_s=pytest.approx(0.15))
    # the second starts when the first has left, not when it has arrived
    assert second.start_s == pytest.approx(0.1)
    assert second.arrive_s == pytest.approx(0.25)


def test_arrival_is_max_of_now_and_link_free_plus_serialisation_plus_latency() -> None:
    shaper = LinkShaper(WAN)
    shaper.schedule(250_000, now=0.0)  # busy until 0.1
    mid = shaper.schedule(25_000, now=0.05)  # queued: starts at 0.1
    assert mid.arrive_s == pytest.approx(0.1 + 0.01 + 0.05)
    late = shaper.schedule(25_000, now=1.0)  # the link went idle meanwhile
    assert late.start_s == 1.0
    assert late.arrive_s == pytest.approx(1.0 + WAN.transfer_s(25000))


def test_a_stream_runs_at_the_bandwidth() -> None:
    shaper = LinkShaper(WAN)
    last = [shaper.schedule(1000, now=0.0) for _ in range(2500)][-1]  # 2.5 MB = 1 s
    assert last.arrive_s == pytest.approx(1.0 + WAN.latency_s)


def test_reset_forgets_frames_queued_on_a_dead_connection() -> None:
    shaper = LinkShaper(WAN)
    shaper.schedule(2_500_000, now=0.0)  # busy for a second
    shaper.reset()
    assert shaper.schedule(0, now=0.5).arrive_s == pytest.approx(0.5 + WAN.latency_s)


def test_a_link_without_bandwidth_is_refused() -> None:
    with pytest.raises(ValueError, match="not a usable link shape"):
        LinkShaper(LinkShape(latency_s=0.01, bandwidth_bps=0))


def test_outgoing_shapes_are_the_links_a_site_sends_on() -> None:
    topology = load_topology("three-continents")
    site = topology.sites[0]
    shapes = outgoing_shapes(topology, site)
    assert sorted(shapes) == sorted(s for s in topology.sites if s != site)
    assert all(shapes[peer] == topology.link(site, peer) for peer in shapes)
