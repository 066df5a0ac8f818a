"""Topologies: which sites exist and what the link between each pair looks like.

A topology file (YAML) names its sites and gives every pair's one-way latency and
bandwidth; `defaults` covers pairs not listed. Links are symmetric unless a pair
is listed in both directions. See platform/net/topologies/*.yaml.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from atoll.platform.core.errors import AtollError

BUILTIN_DIR = Path(__file__).parent / "topologies"


@dataclass(frozen=True)
class LinkShape:
    """A one-directional link: propagation delay and serialisation rate."""

    latency_s: float
    bandwidth_bps: float  # bits per second

    def transfer_s(self, nbytes: int) -> float:
        """Time from the first byte entering the link to the last byte arriving."""
        return self.latency_s + 8 * nbytes / self.bandwidth_bps


@dataclass(frozen=True)
class Topology:
    name: str
    sites: tuple[str, ...]
    links: dict[tuple[str, str], LinkShape]  # every ordered pair of distinct sites
    description: str = ""

    def link(self, src: str, dst: str) -> LinkShape:
        return self.links[(src, dst)]

    def with_links_of(self, other: "Topology") -> "Topology":
        """These sites, joined by `other`'s default link (e.g. the same sites on a LAN)."""
        shape = next(iter(other.links.values()))
        links = {(a, b): shape for a in self.sites for b in self.sites if a != b}
        return Topology(f"{self.name} on {other.name} links", self.sites, links, other.description)

    def subset(self, count: int) -> "Topology":
        """The first `count` sites, with their links."""
        if not 1 <= count <= len(self.sites):
            raise AtollError(f"topology {self.name} has {len(self.sites)} sites, not {count}")
        sites = self.sites[:count]
        links = {k: v for k, v in self.links.items() if k[0] in sites and k[1] in sites}
        return Topology(self.name, sites, links, self.description)


def load_topology(name_or_path: str) -> Topology:
    """A built-in topology by name (`lan`, `three-continents`, `gaia-11`) or a YAML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = BUILTIN_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml")))
        raise AtollError(f"no topology {name_or_path!r}; built in: {known}; or give a .yaml path")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise AtollError(f"topology {path} is not valid YAML: {e}") from e
    return parse_topology(raw, path.stem)


def parse_topology(raw: object, name: str) -> Topology:
    def fail(problem: str) -> AtollError:
        return AtollError(f"topology {name}: {problem}")

    if not isinstance(raw, dict):
        raise fail("expected a mapping with `sites` and `links`")
    sites = raw.get("sites")
    if not isinstance(sites, list) or not sites or not all(isinstance(s, str) for s in sites):
        raise fail("`sites` must be a non-empty list of names")
    if len(set(sites)) != len(sites):
        raise fail("site names must be unique")
    defaults = raw.get("defaults") or {}
    links: dict[tuple[str, str], LinkShape] = {}
    for entry in raw.get("links") or []:
        if not isinstance(entry, dict) or not {"from", "to"} <= entry.keys():
            raise fail(f"each link needs `from` and `to`: {entry!r}")
        a, b = entry["from"], entry["to"]
        if a not in sites or b not in sites or a == b:
            raise fail(f"link {a} -> {b} must join two different listed sites")
        shape = _shape({**defaults, **entry}, fail, f"{a} -> {b}")
        links[(a, b)] = shape
        links.setdefault((b, a), shape)  # symmetric unless the reverse is listed too
    for a in sites:
        for b in sites:
            if a != b and (a, b) not in links:
                if not defaults:
                    raise fail(f"no link {a} -> {b} and no `defaults`")
                links[(a, b)] = _shape(defaults, fail, "defaults")
    return Topology(name, tuple(sites), links, str(raw.get("description", "")).strip())


def _shape(entry: dict[str, Any], fail: Callable[[str], AtollError], where: str) -> LinkShape:
    try:
        latency_ms = float(entry["latency_ms"])
        bandwidth_mbps = float(entry["bandwidth_mbps"])
    except (KeyError, TypeError, ValueError):
        raise fail(f"{where}: needs numeric latency_ms and bandwidth_mbps") from None
    if not (latency_ms >= 0 and bandwidth_mbps > 0):
        raise fail(f"{where}: latency_ms must be >= 0 and bandwidth_mbps > 0")
    return LinkShape(latency_ms / 1000, bandwidth_mbps * 1e6)
