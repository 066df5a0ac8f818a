"""Redis key names, all under one prefix so that deployments (and test runs) sharing a
Redis never read each other's messages."""

from dataclasses import dataclass

AGENT_GROUP = "agent"  # reads a site's command stream
CONTROL_GROUP = "control"  # reads the status stream
CONTROL_CONSUMER = "control"  # one control plane; a restarted one takes over its pending reports
# An agent's liveness key lives this many heartbeats: one missed beat is forgiven.
TTL_BEATS = 2


def liveness_ttl_s(heartbeat_s: float) -> float:
    """The time to live an agent gives its liveness key (`BusKeys.alive`)."""
    return TTL_BEATS * heartbeat_s


@dataclass(frozen=True)
class SiteKeys:
    """One key per site under a common stem: `keys(site)` is `<stem>:<site>`."""

    stem: str

    def __call__(self, site: str) -> str:
        return f"{self.stem}:{site}"

    @property
    def pattern(self) -> str:
        """A SCAN pattern that matches every site's key."""
        return f"{self.stem}:*"

    def site_of(self, key: str) -> str:
        return key.removeprefix(f"{self.stem}:")


class BusKeys:
    """Every key of one deployment, under its prefix."""

    def __init__(self, prefix: str = "atoll") -> None:
        self.prefix = prefix
        # Per site: its commands, a stream its agent reads through its consumer group;
        self.commands = SiteKeys(f"{prefix}:commands")
        # its status reports, a stream of its own like its telemetry;
        self.status = SiteKeys(f"{prefix}:status")
        # its telemetry, a stream that only its Redis user may append to, so a sample is the
        # site's whatever it says (platform/bus/acl.py);
        self.telemetry = SiteKeys(f"{prefix}:telemetry")
        # its liveness key, its agent's last `Beat`, which lapses unless renewed (`liveness_ttl_s`).
        self.alive = SiteKeys(f"{prefix}:alive")
        # The CA's certificate revocation list (PEM), for every site to read.
        self.crl = f"{prefix}:crl"
