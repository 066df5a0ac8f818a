"""The site's device tier under the edge agent: its Flower SuperLink, started with the
agent when the site file enables devices, restarted when it dies, stopped with the agent.

Devices (Flower SuperNodes) connect to it whether or not a job runs; a device-tier run
(Atoll's ServerApp, `atoll devices run` or FlowerSite.start_run) is submitted to it.
"""

import logging
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from atoll.platform.core.errors import AtollError
from atoll.platform.devices.flower import FlowerTls, SuperLinkOptions
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
    max_restarts: int = Field(5, ge=0, description="SuperLink restarts before the agent gives up")

    def superlink(self, state_dir: Path) -> SuperLinkOptions:
        tls = None
        if self.tls_dir is not None:
            d = self.tls_dir
            tls = FlowerTls(d / "ca.pem", d / "superlink.pem", d / "superlink.key")
        # On disk: registered nodes and runs outlive a SuperLink restart.
        return SuperLinkOptions(self.port, self.host, tls, self.node_auth, state_dir / "flower.db")


class DeviceTier:
    """Keeps the site's SuperLink up while the agent runs."""

    def __init__(self, config: DevicesConfig, state_dir: Path) -> None:
        self.config = config
        work = state_dir / "devices"
        spec = DeviceSiteSpec(model="-", out_dir=work / "runs")  # runs bring their own spec
        self.site = FlowerSite(spec, config.app, config.superlink(work), work)
        self.restarts = 0

    def start(self) -> None:
        self.site.start_superlink()
        log.info("device tier: SuperLink on %s", self.site.superlink.address)

    def supervise(self) -> None:
        """Restart the SuperLink if it died (devices reconnect by themselves)."""
        if self.site.superlink_alive():
            return
        if self.restarts >= self.config.max_restarts:
            raise AtollError(
                f"the SuperLink died {self.restarts + 1} times; see {self.site.work}/superlink.log"
            )
        self.restarts += 1
        log.warning("device tier: SuperLink exited; restart %d", self.restarts)
        time.sleep(min(2.0**self.restarts, 30.0))
        self.start()

    def stop(self) -> None:
        self.site.stop()
