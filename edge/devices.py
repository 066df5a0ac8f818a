"""The site's device tier under the edge agent: its Flower SuperLink and the SuperExec
that runs Atoll's ServerApp, started with the agent when the site file enables devices,
restarted when they die (a run in flight goes on: see platform/devices/launch.py),
stopped with the agent.

Devices (Flower SuperNodes) connect to it whether or not a job runs; a device-tier run
(Atoll's ServerApp) is submitted to it by `atoll devices run --agent-state DIR`.
"""

import logging
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from atoll.platform.bus.messages import DeviceRound, DeviceTierReport
from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import DeviceRoundDone, RunEvent, TrainingFailed, TrainingFinished
from atoll.platform.core.runlog import EventTail
from atoll.platform.devices.flower import FlowerError, FlowerTls, SuperLinkOptions
from atoll.platform.devices.launch import FlowerSite
from atoll.platform.devices.spec import DeviceSiteSpec

log = logging.getLogger("atoll.edge")
KEEP_ROUNDS = 20  # rounds in each status report: the newest, enough for a chart


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
        tls = None if self.tls_dir is None else FlowerTls.in_folder(self.tls_dir)
        # On disk: registered nodes and runs outlive a SuperLink restart.
        return SuperLinkOptions(self.port, self.host, tls, self.node_auth, state_dir / "flower.db")


class DeviceTier:
    """Keeps the site's SuperLink and SuperExec up while the agent runs."""

    def __init__(self, config: DevicesConfig, state_dir: Path) -> None:
        self.config = config
        self.site = tier_site(config, state_dir)
        self._spec_mtime: int | None = None  # of the spec of the run last submitted
        self._tail: EventTail | None = None  # that run's log
        self.rounds = TierRounds()

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

    def report(self) -> DeviceTierReport:
        """What the agent's status says of the tier: the SuperLink, and the rounds of the
        run last submitted to it (its ServerApp's log, read where its spec says)."""
        self._follow_run()
        if self._tail is not None:
            self.rounds.take(self._tail.read())
        return DeviceTierReport(
            superlink=self.site.superlink.address,
            up=self.site.superlink_alive() and self.site.superexec_alive(),
            restarts=self.site.restarts,
            run_dir=str(self._tail.path.parent) if self._tail is not None else None,
            finished=self.rounds.finished,
            rounds=list(self.rounds.rounds),
        )

    def _follow_run(self) -> None:
        spec_file = self.site.work / "site.json"  # FlowerSite.start_run writes it
        try:
            mtime = spec_file.stat().st_mtime_ns
        except OSError:
            return  # no run submitted yet
        if mtime == self._spec_mtime:
            return
        self._spec_mtime = mtime  # a spec that cannot be read is reported once
        try:
            out_dir = DeviceSiteSpec.load(spec_file).out_dir
        except (OSError, ValueError) as e:
            log.warning("device tier: cannot read %s: %s", spec_file, e)
            return
        self._tail, self.rounds = EventTail(out_dir / "log.jsonl"), TierRounds()


class TierRounds:
    """The newest rounds of one run's log, as the status carries them (sans-IO)."""

    def __init__(self, keep: int = KEEP_ROUNDS) -> None:
        self.rounds: deque[DeviceRound] = deque(maxlen=keep)
        self.finished = False

    def take(self, events: Iterable[RunEvent]) -> None:
        for event in events:
            if isinstance(event, DeviceRoundDone):
                if self.rounds and event.round <= self.rounds[-1].round:
                    self.rounds.clear()  # another run began in the same log
                    self.finished = False
                self.rounds.append(device_round(event))
            elif isinstance(event, TrainingFinished | TrainingFailed):
                self.finished = True


def device_round(event: DeviceRoundDone) -> DeviceRound:
    return DeviceRound(
        round=event.round,
        time=event.time,
        devices=event.devices,
        replied=event.replied,
        refused=event.refused,
        dropped=len(event.silent),
        late=event.late,
        examples=event.examples,
        seconds=event.round_s,
        accuracy=event.device_accuracy,
    )


def tier_site(config: DevicesConfig, state_dir: Path) -> FlowerSite:
    """The agent's device site: `atoll devices run --agent-state` submits runs to it."""
    work = state_dir / "devices"
    spec = DeviceSiteSpec(model="-", out_dir=work / "runs")  # runs bring their own spec
    return FlowerSite(spec, config.app, config.superlink(work), work)
