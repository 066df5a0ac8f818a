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


@dataclass(frozen=True)
class BusKeys:
    prefix: str = "atoll"

    @property
    def commands(self) -> SiteKeys:
        """A site's commands: a stream its agent reads through its consumer group."""
        return SiteKeys(f"{self.prefix}:commands")

    @property
    def status(self) -> SiteKeys:
        """A site's status reports: a stream of its own, like its telemetry."""
        return SiteKeys(f"{self.prefix}:status")

    @property
    def telemetry(self) -> SiteKeys:
        """A site's telemetry: a stream of its own, which only its Redis user may append to,
        so a sample is the site's whatever it says (platform/bus/acl.py)."""
        return SiteKeys(f"{self.prefix}:telemetry")

    @property
    def alive(self) -> SiteKeys:
        """A site's liveness key: its agent's last `Beat`, which expires unless renewed."""
        return SiteKeys(f"{self.prefix}:alive")

    @property
    def crl(self) -> str:
        """The CA's certificate revocation list (PEM), for every site to read."""
        return f"{self.prefix}:crl"
