import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.net.topology import load_topology, parse_topology


@pytest.mark.parametrize(("name", "sites"), [("lan", 11), ("three-continents", 3), ("gaia-11", 11)])
def test_builtin_topologies_join_every_pair(name: str, sites: int) -> None:
    topology = load_topology(name)
    assert len(topology.sites) == sites
    assert len(topology.links) == sites * (sites - 1)
    assert topology.description


def test_gaia_11_matches_what_gaia_measured_against_a_1_gbps_lan() -> None:
    topology = load_topology("gaia-11")
    pairs = {tuple(sorted(k)): v.bandwidth_bps for k, v in topology.links.items()}
    assert sum(pairs.values()) / len(pairs) == pytest.approx(1e9 / 15, rel=0.01)
    assert min(pairs.values()) == pytest.approx(1e9 / 60, rel=0.01)


def test_links_are_symmetric_unless_both_directions_are_given() -> None:
    raw = {
        "sites": ["a", "b"],
        "links": [
            {"from": "a", "to": "b", "latency_ms": 10, "bandwidth_mbps": 100},
            {"from": "b", "to": "a", "latency_ms": 20, "bandwidth_mbps": 50},
        ],
    }
    topology = parse_topology(raw, "t")
    assert topology.link("a", "b").latency_s == 0.01
    assert topology.link("b", "a").latency_s == 0.02
    one_way = parse_topology({**raw, "links": raw["links"][:1]}, "t")
    assert one_way.link("b", "a") == one_way.link("a", "b")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ([], "expected a mapping"),
        ({"sites": []}, "non-empty list"),
        ({"sites": ["a", "a"]}, "unique"),
        ({"sites": ["a", "b"]}, "no link a -> b and no `defaults`"),
        ({"sites": ["a", "b"], "links": [{"from": "a", "to": "c"}]}, "two different listed sites"),
        (
            {"sites": ["a", "b"], "defaults": {"latency_ms": 1}},
            "numeric latency_ms and bandwidth_mbps",
        ),
        (
            {"sites": ["a", "b"], "defaults": {"latency_ms": -1, "bandwidth_mbps": 1}},
            "must be >= 0",
        ),
    ],
)
def test_bad_topologies_name_the_problem(raw: object, problem: str) -> None:
    with pytest.raises(AtollError, match=problem):
        parse_topology(raw, "t")


def test_unknown_topology_lists_the_built_in_ones() -> None:
    with pytest.raises(AtollError, match="built in: gaia-11, lan, three-continents"):
        load_topology("mars")
