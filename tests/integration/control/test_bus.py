"""The Redis bus against a real Redis: consumer groups deliver at least once, liveness keys
lapse, telemetry stays bounded, and a restarted Redis is noticed and recovered from."""

import time
from pathlib import Path

import pytest
from integration.control.harness import own_redis, scratch_bus, shared_redis_url

from atoll.platform.bus import Command, Telemetry
from atoll.platform.bus.connection import Bus, BusDown
from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import AgentStatus, Beat

pytestmark = pytest.mark.integration


def command(command_id: str, site: str = "a") -> Command:
    return Command(id=command_id, site=site, kind="drain", issued_at=time.time())


def test_a_command_is_delivered_again_until_it_is_acknowledged() -> None:
    with scratch_bus(shared_redis_url()) as bus:
        bus.publish_command(command("c1"))
        bus.publish_command(command("c2"))
        first = bus.read_commands("a", block_ms=100)
        assert [c.id for _, c in first] == ["c1", "c2"]
        assert bus.read_commands("a", block_ms=50) == []  # nothing new
        bus.ack_command("a", first[0][0])
        # The agent died before acknowledging c2: its next incarnation reads it again.
        pending = bus.read_commands("a", block_ms=0, pending=True)
        assert [c.id for _, c in pending] == ["c2"]
        bus.ack_command("a", pending[0][0])
        assert bus.read_commands("a", block_ms=0, pending=True) == []


def test_streams_are_per_site_and_an_unreadable_entry_comes_through_as_none() -> None:
    with scratch_bus(shared_redis_url()) as bus:
        bus.publish_command(command("for-b", site="b"))
        assert bus.read_commands("a", block_ms=50) == []
        bus.redis.xadd(bus.keys.commands("b"), {"m": "{not json"})
        read = bus.read_commands("b", block_ms=50)
        assert [None if c is None else c.id for _, c in read] == ["for-b", None]


def test_a_liveness_key_lapses_after_its_time_to_live() -> None:
    with scratch_bus(shared_redis_url()) as bus:
        bus.beat("a", Beat(time=1.0, state="idle", incarnation="i"), ttl_s=0.3)
        assert bus.beats(["a", "b"])["a"] == Beat(time=1.0, state="idle", incarnation="i")
        assert bus.beats(["a", "b"])["b"] is None
        time.sleep(0.5)
        assert bus.beats(["a"]) == {"a": None}


def test_telemetry_is_bounded_and_read_in_order_from_a_cursor() -> None:
    with scratch_bus(shared_redis_url()) as bus:
        samples = [
            Telemetry(site="a", job_id="j", time=float(i), kind="step", clock=i) for i in range(300)
        ]
        bus.publish_telemetry(samples, maxlen=100)
        # MAXLEN ~ trims whole macro nodes: about the bound, never the whole history.
        assert 100 <= bus.redis.xlen(bus.keys.telemetry("a")) < 300
        assert bus.telemetry_sites() == ["a"]
        read = bus.read_telemetry({"a": "0-0"}, block_ms=0, count=1000)
        clocks = [s.clock for _, _, s in read if s is not None]
        assert clocks == sorted(clocks)
        assert clocks[-1] == 299
        assert bus.read_telemetry({"a": read[-1][1]}, block_ms=50) == []
        assert bus.last_telemetry_id("a") == read[-1][1]


def test_telemetry_is_the_sites_whose_stream_it_is_on() -> None:
    with scratch_bus(shared_redis_url()) as bus:
        forged = Telemetry(site="b", job_id="j", time=1.0, kind="step", clock=1)
        bus.redis.xadd(bus.keys.telemetry("a"), dict(forged.encode()))  # a writes as b
        bus.publish_telemetry(
            [Telemetry(site="a", job_id="j", time=2.0, kind="step", clock=2)], 100
        )
        read = bus.read_telemetry({"a": "0-0", "b": "0-0"}, block_ms=0)
        assert [(site, s.clock if s else None) for site, _, s in read] == [("a", None), ("a", 2)]


def test_a_restarted_redis_is_noticed_and_its_lost_groups_are_made_again(tmp_path: Path) -> None:
    with own_redis(tmp_path / "redis") as server:
        bus = Bus(server.url, BusKeys("atoll-test-restart"), timeout_s=2)
        try:
            epoch = bus.epoch()
            bus.publish_command(command("c1"))
            server.restart()
            assert bus.epoch() != epoch  # a new Redis (reached again): it forgot everything
            assert bus.read_commands("a", block_ms=10) == []  # the group is made again
            bus.publish_command(command("c1"))  # issued again by the control plane
            assert [c.id for _, c in bus.read_commands("a", block_ms=100)] == ["c1"]
        finally:
            bus.close()


def test_an_unreachable_redis_is_one_clear_error() -> None:
    bus = Bus("redis://127.0.0.1:1/0", BusKeys("atoll-test-restart"), timeout_s=0.5)
    with pytest.raises(BusDown, match="unreachable"):
        bus.epoch()


def test_a_status_report_is_the_sites_whose_stream_it_is_on() -> None:
    with scratch_bus(shared_redis_url()) as bus:
        report = {
            "incarnation": "i", "seq": 1, "time": 1.0, "state": "idle", "region": "r",
            "geo_host": "h", "geo_port": 1, "geo_ports": 1, "version": "v",
        }  # fmt: skip
        forged = AgentStatus(site="b", **report)  # type: ignore[arg-type]
        bus.redis.xadd(bus.keys.status("a"), dict(forged.encode()))  # a reports as b
        bus.publish_status(AgentStatus(site="a", **report))  # type: ignore[arg-type]
        assert bus.status_sites() == ["a"]
        bus.read_status(["a"], "control", block_ms=10)  # makes the group
        bus.redis.xadd(bus.keys.status("a"), dict(forged.encode()))
        bus.publish_status(AgentStatus(site="a", **report))  # type: ignore[arg-type]
        read = bus.read_status(["a"], "control", block_ms=10, pending=False)
        assert [(site, s.site if s else None) for site, _, s in read] == [
            ("a", None), ("a", "a"), ("a", None), ("a", "a")
        ]  # fmt: skip
