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
class BusKeys:
    prefix: str = "atoll"

    def commands(self, site: str) -> str:
        return f"{self.prefix}:commands:{site}"

    def status(self, site: str) -> str:
        """A site's status reports: a stream of its own, like its telemetry."""
        return f"{self.prefix}:status:{site}"

    @property
    def status_streams(self) -> str:
        return f"{self.prefix}:status:*"

    def site_of_status_stream(self, key: str) -> str:
        return key.removeprefix(f"{self.prefix}:status:")

    def telemetry(self, site: str) -> str:
        """A site's telemetry: a stream of its own, which only its Redis user may append to,
        so a sample is the site's whatever it says (platform/bus/acl.py)."""
        return f"{self.prefix}:telemetry:{site}"

    @property
    def telemetry_streams(self) -> str:
        """A SCAN pattern that matches every site's telemetry stream."""
        return f"{self.prefix}:telemetry:*"

    def site_of_telemetry_stream(self, key: str) -> str:
        return key.removeprefix(f"{self.prefix}:telemetry:")

    @property
    def crl(self) -> str:
        """The CA's certificate revocation list (PEM), for every site to read."""
        return f"{self.prefix}:crl"

    def alive(self, site: str) -> str:
        return f"{self.prefix}:alive:{site}"

    def site_of_alive_key(self, key: str) -> str:
        return key.removeprefix(f"{self.prefix}:alive:")
