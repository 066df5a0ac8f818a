"""Running a device site on Flower: its SuperLink, Atoll's ServerApp as a Flower run,
and SuperNodes beside it where devices are played on this host (tests, demo, bench).

The edge agent and `atoll devices run` use FlowerSite; a device owner runs only
`flower-supernode`. FlowerSite keeps its two processes up (`supervise`): a SuperLink that
died is started again on the same port and state database, and the ServerApp, which the
SuperExec started and which outlives the SuperLink, reconnects and goes on with its
round: messages already sent and replies already in stay in the database, a round that
lost replies ends at its deadline with those who replied, and a reply is taken once.
"""

import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from atoll.platform.core.events import (
    DeviceRoundDone,
    TrainingFailed,
    TrainingFinished,
    of_kind,
)
from atoll.platform.core.runlog import read_events
from atoll.platform.devices.flower import (
    FlowerError,
    SuperLinkOptions,
    SuperNodeOptions,
    flower_env,
    run_status,
    site_app,
    submit,
    superexec_command,
    superlink_command,
    supernode_command,
    wait_listening,
    write_flower_home,
    write_superexec_secret,
)
from atoll.platform.devices.spec import DeviceSiteSpec

log = logging.getLogger("atoll.devices")
_STARTUP_S = 120.0  # Flower's processes import a lot; a busy host takes its time
_STATUS_GRACE_S = 60.0  # from the ServerApp's last event to the SuperLink's "completed"


@dataclass
class FlowerSite:
    spec: DeviceSiteSpec
    app_dir: Path  # the device app (its ClientApp is what the devices run)
    superlink: SuperLinkOptions
    work: Path  # the site's Flower home, app copy, spec and logs
    run_id: int | None = None
    restarts: int = 0  # of the SuperLink and the SuperExec, by supervise()
    _trained_at: float | None = None  # monotonic time the ServerApp's last event was seen
    _superlink: subprocess.Popen[bytes] | None = None
    _superexec: subprocess.Popen[bytes] | None = None
    _logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.work / "flower-home"

    @property
    def log_path(self) -> Path:
        return self.spec.out_dir / "log.jsonl"

    def start_superlink(self) -> None:
        """The SuperLink and the SuperExec that runs its ServerApps."""
        self.work.mkdir(parents=True, exist_ok=True)
        if self.superlink.superexec_secret is None:
            secret = write_superexec_secret(self.work / "superexec.secret")
            self.superlink = replace(self.superlink, superexec_secret=secret)
        write_flower_home(self.home, self.superlink)
        self._start_superlink()
        self._start_superexec()

    def _start_superlink(self) -> None:
        self._superlink = self._spawn(superlink_command(self.superlink), "superlink.log")
        wait_listening(
            self.superlink.local_address.rpartition(":")[0],
            self.superlink.port,
            _STARTUP_S,
            self._superlink,
        )

    def _start_superexec(self) -> None:
        self._superexec = self._spawn(superexec_command(self.superlink), "superexec.log")

    def _spawn(self, command: list[str], log_name: str) -> subprocess.Popen[bytes]:
        out = (self.work / log_name).open("ab")
        self._logs.append(out)
        return subprocess.Popen(
            command,
            env=flower_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stopped with what it started (its process group)
        )

    def superlink_alive(self) -> bool:
        return self._superlink is not None and self._superlink.poll() is None

    def superexec_alive(self) -> bool:
        return self._superexec is not None and self._superexec.poll() is None

    def supervise(self, max_restarts: int) -> bool:
        """Start again whichever of the SuperLink and the SuperExec it started died; whether
        one had. FlowerError once they died more than `max_restarts` times in all."""
        dead = [
            (name, start)
            for name, process, start in (
                ("SuperLink", self._superlink, self._start_superlink),
                ("SuperExec", self._superexec, self._start_superexec),
            )
            if process is not None and process.poll() is not None
        ]
        for name, start in dead:
            if self.restarts >= max_restarts:
                raise FlowerError(f"the {name} died {self.restarts + 1} times; see {self.work}")
            self.restarts += 1
            log.warning("device tier: the %s exited; starting it again (%d)", name, self.restarts)
            start()
        return bool(dead)

    def start_run(self, run_config: dict[str, int | float | str] | None = None) -> int:
        """Atoll's ServerApp on the SuperLink, as a run of the device app."""
        spec_file = self.work / "site.json"
        spec_file.write_text(self.spec.model_dump_json(indent=2))
        app = site_app(self.app_dir, self.work / "app", spec_file)
        self.run_id = submit(self.home, app, run_config)
        return self.run_id

    def status(self) -> str:
        if self.run_id is None:
            raise FlowerError("no run started")
        return run_status(self.home, self.run_id)

    def rounds_done(self) -> list[DeviceRoundDone]:
        return (
            of_kind(read_events(self.log_path), DeviceRoundDone) if self.log_path.exists() else []
        )

    def wait(self, timeout_s: float, poll_s: float = 2.0, max_restarts: int = 0) -> None:
        """Until the ServerApp finished; FlowerError if the run failed or time ran out."""
        deadline = time.monotonic() + timeout_s
        while not self.wait_step(deadline, poll_s, max_restarts):
            pass

    def wait_step(self, deadline: float, poll_s: float = 2.0, max_restarts: int = 0) -> bool:
        """Whether the run finished, after at most `poll_s`; FlowerError if the run failed,
        the SuperLink died more than `max_restarts` times or `deadline` (monotonic) passed.

        Finished means the ServerApp logged the end of training and the SuperLink marked the
        run completed: the ServerApp reports its status as it exits, a moment after its last
        event (longer when the SuperLink restarted under it). Should the SuperLink not say
        so within `_STATUS_GRACE_S` of the last event, the run counts as finished anyway
        (the model is written) and the lag is logged."""
        events = read_events(self.log_path) if self.log_path.exists() else []
        failed = of_kind(events, TrainingFailed)
        if failed:
            where = self.spec.out_dir / "serverapp.log"
            raise FlowerError(f"the site's ServerApp failed: {failed[-1].message} (see {where})")
        trained = bool(of_kind(events, TrainingFinished))
        if trained and self._trained_at is None:
            self._trained_at = time.monotonic()
        if self.supervise(max_restarts):
            return False  # the run's status once the SuperLink is back
        try:
            status = self.status()
        except FlowerError as e:  # the SuperLink is away (another process restarts it)
            log.warning("run %s: no status (%s)", self.run_id, e)
            status = "unknown"
        if status.startswith("finished") and not status.endswith("completed"):
            raise FlowerError(f"run {self.run_id} {status}; see {self.work}/superlink.log")
        if trained and status == "finished:completed":
            assert self._trained_at is not None
            lag = time.monotonic() - self._trained_at
            log.debug("run %s completed %.1f s after its last event", self.run_id, lag)
            return True
        if self._trained_at is not None and time.monotonic() - self._trained_at > _STATUS_GRACE_S:
            log.warning(
                "run %s: training finished %.0f s ago and the SuperLink still says %s",
                self.run_id,
                _STATUS_GRACE_S,
                status,
            )
            return True
        if time.monotonic() > deadline:
            raise FlowerError(f"run {self.run_id} not finished in time (status {status})")
        time.sleep(poll_s)
        return False

    def stop(self) -> None:
        for process in (self._superexec, self._superlink):
            if process is not None:
                stop_process(process)
        for out in self._logs:
            out.close()


def start_supernode(options: SuperNodeOptions, log_path: Path) -> subprocess.Popen[bytes]:
    """A SuperNode on this host (a device played here); its output goes to `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            supernode_command(options),
            env=flower_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its ClientApp processes go when it is stopped
        )


def stop_process(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """Stop a Flower process and what it started (its session's process group)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # children that outlived their parent
    process.wait()
