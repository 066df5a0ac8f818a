"""Link shaping arithmetic, sans I/O: when a frame leaves and when it arrives.

A shaped link is a FIFO pipe: a frame of n bytes occupies it for 8n/bandwidth
seconds (serialisation), frames queue behind each other, and each arrives one
`latency_s` after its last byte went in. The next frame serialises while earlier
ones are still in flight, so an idle link delivers a frame in exactly
`LinkShape.transfer_s(n)` and a busy one at its bandwidth. The simulator charges
the same: arrival = max(now, link_free) + 8n/bw + latency.
"""

from dataclasses import dataclass

from atoll.platform.net.topology import LinkShape, Topology


@dataclass(frozen=True)
class Departure:
    start_s: float  # the first byte enters the link
    free_s: float  # the last byte has entered; the next frame may start
    arrive_s: float  # the last byte has arrived at the peer


class LinkShaper:
    def __init__(self, shape: LinkShape) -> None:
        if shape.bandwidth_bps <= 0 or shape.latency_s < 0:
            raise ValueError(f"not a usable link shape: {shape}")
        self.shape = shape
        self.free_s = float("-inf")

    def schedule(self, nbytes: int, now: float) -> Departure:
        """Put a frame of `nbytes` on the link at `now`, behind whatever is queued."""
        start = max(now, self.free_s)
        self.free_s = start + 8 * nbytes / self.shape.bandwidth_bps
        return Departure(start, self.free_s, self.free_s + self.shape.latency_s)

    def reset(self) -> None:
        """A new connection: frames queued on the old one were lost with it."""
        self.free_s = float("-inf")


def outgoing_shapes(topology: Topology, site: str) -> dict[str, LinkShape]:
    """The shape of each link `site` sends on, for `SiteEndpoint(shapes=...)`."""
    return {dst: shape for (src, dst), shape in topology.links.items() if src == site}
