"""The map: sites placed by region on an equirectangular world, links drawn between them
with their latency, bandwidth and utilisation. Server-side SVG: no tile server is
reachable, and none is needed to see where the sites are and what the links carry."""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 1000.0, 500.0
# Where cloud regions are, by region and by the city that sites of the built-in topologies
# are named after: (region, city, (longitude, latitude)).
_REGIONS: tuple[tuple[str, str, tuple[float, float]], ...] = (
    ("us-east-1", "virginia", (-77.5, 39.0)),
    ("us-east-2", "ohio", (-83.0, 40.0)),
    ("us-west-1", "california", (-122.0, 37.4)),
    ("us-west-2", "oregon", (-119.7, 45.8)),
    ("ca-central-1", "canada", (-73.6, 45.5)),
    ("sa-east-1", "sao-paulo", (-46.6, -23.5)),
    ("eu-west-1", "ireland", (-6.3, 53.3)),
    ("eu-west-2", "london", (-0.1, 51.5)),
    ("eu-west-3", "paris", (2.35, 48.9)),
    ("eu-central-1", "frankfurt", (8.7, 50.1)),
    ("eu-north-1", "stockholm", (18.1, 59.3)),
    ("ap-south-1", "mumbai", (72.9, 19.1)),
    ("ap-southeast-1", "singapore", (103.8, 1.35)),
    ("ap-southeast-2", "sydney", (151.2, -33.9)),
    ("ap-northeast-1", "tokyo", (139.7, 35.7)),
    ("ap-northeast-2", "seoul", (127.0, 37.6)),
    ("ap-east-1", "hong-kong", (114.2, 22.3)),
    ("af-south-1", "cape-town", (18.4, -33.9)),
    ("me-south-1", "bahrain", (50.6, 26.1)),
)
PLACES: dict[str, tuple[float, float]] = {
    name: place for region, city, place in _REGIONS for name in (region, city)
}


def project(lon: float, lat: float) -> tuple[float, float]:
    return (lon + 180) / 360 * WIDTH, (90 - lat) / 180 * HEIGHT


def place(name: str, region: str | None) -> tuple[float, float, bool]:
    """(x, y, known): a known region or site name, else a spot along the bottom edge
    that depends only on the name, so it stays put from one page to the next."""
    for key in (region, name):
        if key and key.lower() in PLACES:
            return (*project(*PLACES[key.lower()]), True)
    spot = sum(ord(c) for c in (region or name)) % 97 / 97
    return 40 + spot * (WIDTH - 80), HEIGHT - 30, False


@dataclass(frozen=True)
class MapSite:
    name: str
    region: str | None
    x: float
    y: float
    known_place: bool
    online: bool | None
    state: str | None


@dataclass(frozen=True)
class MapLink:
    a: MapSite
    b: MapSite
    latency_ms: float
    bandwidth_mbps: float
    utilisation: float | None  # of the bandwidth, 0..1 (and more when over), both directions' max

    @property
    def width(self) -> float:
        """Thicker for more bandwidth."""
        return 1.0 + 3.0 * math.log10(max(1.0, self.bandwidth_mbps)) / 3.0


def lay_out(
    sites: Sequence[tuple[str, str | None, bool | None, str | None]],
) -> list[MapSite]:
    """Sites (name, region, online, state) on the map; two at one spot are fanned out."""
    placed: list[MapSite] = []
    taken: dict[tuple[int, int], int] = {}
    for name, region, online, state in sites:
        x, y, known = place(name, region)
        key = (round(x), round(y))
        n = taken.get(key, 0)
        taken[key] = n + 1
        if n:
            angle = n * 2.4
            x, y = x + 14 * math.cos(angle) * math.sqrt(n), y + 14 * math.sin(angle) * math.sqrt(n)
        placed.append(MapSite(name, region, x, y, known, online, state))
    return placed


def link_between(
    by_name: Mapping[str, MapSite],
    a: str,
    b: str,
    latency_s: float,
    bandwidth_bps: float,
    send_rate_bps: Mapping[str, float] | None,
    links_per_site: Mapping[str, int],
) -> MapLink | None:
    """A link with its utilisation estimated from each end's send rate, split evenly over
    its links (every geo policy but bsp sends the same to every mirror)."""
    if a not in by_name or b not in by_name:
        return None
    utilisation = None
    if send_rate_bps is not None:
        shares = [
            send_rate_bps[s] / max(1, links_per_site.get(s, 1))
            for s in (a, b)
            if s in send_rate_bps
        ]
        if shares:
            utilisation = max(shares) / bandwidth_bps
    return MapLink(by_name[a], by_name[b], latency_s * 1000, bandwidth_bps / 1e6, utilisation)
