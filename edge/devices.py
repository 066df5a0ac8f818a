"""The site's device tier under the edge agent: its Flower SuperLink and the SuperExec
that runs Atoll's ServerApp, started with the agent when the site file enables devices,
restarted when they die (a run in flight goes on: see platform/devices/launch.py),
stopped with the agent.

Devices (Flower SuperNodes) connect to it whether or not a job runs; a device-tier run
(Atoll's ServerApp) is submitted to it by `atoll devices run --agent-state DIR`.
"""

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from atoll.platform.core.errors import AtollError
from atoll.platform.devices.flower import FlowerError, FlowerTls, SuperLinkOptions
from atoll.platform.devices.launch import FlowerSite
from atoll.platform.devices.spec import DeviceSiteSpec

log = logging.getLogger("atoll.edge")


class DevicesConfig(BaseModel):
    """`devices:` in site.yaml: where the site's SuperLink listens, and how devices join."""

    model_config = ConfigDict(extra="forbid")

    app: Path = Field(description="the Flower app the devices run (its ClientApp is used as is)")
    host: str = "0.0.0.0"
    port: int = Field(9092, ge=1, le=65535, description="the SuperLink's one HTTP port")
    tls_dir: Path | None = Field(None, description="ca.pem, superlink.pem, superlink.key")
    node_auth: bool = Field(False, description="only SuperNodes registered by public key")
    max_restarts: int = Field(
        5, ge=0, description="SuperLink and SuperExec restarts before the agent gives up"
    )

    def superlink(self, state_dir: Path) -> SuperLinkOptions:
        tls = None
        if self.tls_dir is not None:
            d = self.tls_dir
            tls = FlowerTls(d / "ca.pem", d / "superlink.pem", d / "superlink.key")
        # On disk: registered nodes and runs outlive a SuperLink restart.
        return SuperLinkOptions(self.port, self.host, tls, self.node_auth, state_dir / "flower.db")


class DeviceTier:
    """Keeps the site's SuperLink and SuperExec up while the agent runs."""

    def __init__(self, config: DevicesConfig, state_dir: Path) -> None:
        self.config = config
        self.site = tier_site(config, state_dir)

    @property
    def restarts(self) -> int:
        return self.site.restarts

    def start(self) -> None:
        self.site.start_superlink()
        log.info("device tier: SuperLink on %s", self.site.superlink.address)

    def supervise(self) -> None:
        """Start again what died (devices and the ServerApp reconnect by themselves)."""
        try:
            self.site.supervise(self.config.max_restarts)
        except FlowerError as e:
            raise AtollError(f"device tier: {e}") from e

    def stop(self) -> None:
        self.site.stop()


def tier_site(config: DevicesConfig, state_dir: Path) -> FlowerSite:
    """The agent's device site: `atoll devices run --agent-state` submits runs to it."""
    work = state_dir / "devices"
    spec = DeviceSiteSpec(model="-", out_dir=work / "runs")  # runs bring their own spec
    return FlowerSite(spec, config.app, config.superlink(work), work)
