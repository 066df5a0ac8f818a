#!/usr/bin/env python3
"""Runs containers' healthchecks on a podman host without systemd.

podman records a container's health only when `podman healthcheck run NAME` runs, and it
schedules that with systemd timers. Where there is no systemd (a CI container, this
machine), no healthcheck ever runs: every container stays `starting`, and compose's
`depends_on: condition: service_healthy` waits forever. This runner stands in for the
timers: each running container that has a healthcheck (of one compose project, or every
one) gets `podman healthcheck run` at its own interval, the first as soon as it is seen
(it looks for containers every REFRESH_S seconds).
podman keeps the rest as with its timers: the start period, the retries, the status.

    python3 deploy/podman/healthchecks.py [--project atoll] [--podman podman]

It runs until stopped (SIGTERM, SIGINT) and prints when a container's check result changes.
Restarts are not its business: podman itself restarts a container that exits under a
restart policy (`restart:` in compose), systemd or not.

Only the standard library: it runs with whatever Python the host has.
"""

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import FrameType

# How often podman is asked which containers run (each `podman ps` costs a fraction of a
# CPU second): a container that starts is first checked within this time.
REFRESH_S = 5.0
# How often finished checks are collected and due ones started.
TICK_S = 0.5
NS_PER_S = 1e9
# Docker's and podman's default when a healthcheck sets no interval.
DEFAULT_INTERVAL_S = 30.0
PROJECT_LABEL = "com.docker.compose.project"


@dataclass
class Schedule:
    """When each container's next healthcheck is due. Pure: time comes in as `now`."""

    intervals: dict[str, float] = field(default_factory=dict)
    due: dict[str, float] = field(default_factory=dict)

    def track(self, running: Mapping[str, float], now: float) -> None:
        """The containers running now, with their intervals: a new one is due at once, one
        no longer running is forgotten (if it starts again, it is new again)."""
        for container in self.intervals.keys() - running.keys():
            del self.intervals[container], self.due[container]
        for container, interval_s in running.items():
            if interval_s <= 0:
                raise ValueError(f"{container}: a healthcheck interval must be positive")
            if container not in self.intervals:
                self.due[container] = now
            self.intervals[container] = interval_s

    def take_due(self, now: float, busy: Iterable[str] = ()) -> list[str]:
        """The containers whose check is due now, in a stable order, each then scheduled
        one interval later. A container whose previous check still runs (`busy`) waits."""
        skip = set(busy)
        ready = sorted(c for c, at in self.due.items() if at <= now and c not in skip)
        for container in ready:
            self.due[container] = now + self.intervals[container]
        return ready


def interval_s(inspected: Mapping[str, object]) -> float | None:
    """The healthcheck interval of one `podman inspect` entry, or None without a healthcheck."""
    config = inspected.get("Config")
    check = config.get("Healthcheck") if isinstance(config, dict) else None
    if not isinstance(check, dict):
        return None
    test = check.get("Test") or []
    if not test or test[0] == "NONE":
        return None
    interval = check.get("Interval") or 0
    return interval / NS_PER_S if interval > 0 else DEFAULT_INTERVAL_S


def outcome(returncode: int, output: str) -> str:
    """One check's result as the log shows it. `podman healthcheck run` prints nothing when
    the check passes, and `unhealthy` or podman's own error when it does not; a failure
    within the start period leaves the container `starting`, as podman's status says."""
    if returncode == 0:
        return "check passed"
    lines = output.strip().splitlines()
    return f"check failed: {lines[-1] if lines else f'exit {returncode}'}"


class Runner:
    """The I/O around Schedule: podman ps and inspect to find containers, and one
    `podman healthcheck run` subprocess per due check."""

    def __init__(self, podman: str, project: str | None) -> None:
        self.podman = podman
        self.project = project
        self.schedule = Schedule()
        self.names: dict[str, str] = {}  # container id -> its name, for the log
        self.intervals: dict[str, float | None] = {}  # per id: a container keeps its config
        self.checks: dict[str, subprocess.Popen[bytes]] = {}
        self.outcomes: dict[str, str] = {}  # per id: the last check's, for the log
        self.stopping = False

    def running(self) -> dict[str, float]:
        ps = [self.podman, "ps", "--quiet", "--no-trunc", "--filter", "status=running"]
        if self.project:
            ps += ["--filter", f"label={PROJECT_LABEL}={self.project}"]
        ids = subprocess.run(ps, capture_output=True, text=True, check=True).stdout.split()
        unknown = [i for i in ids if i not in self.intervals]
        if unknown:
            inspect = [self.podman, "inspect", "--type", "container", *unknown]
            found = subprocess.run(inspect, capture_output=True, text=True)
            # A container may be gone since `ps`: what inspect did find is still good.
            for entry in json.loads(found.stdout or "[]"):
                self.intervals[entry["Id"]] = interval_s(entry)
                self.names[entry["Id"]] = str(entry.get("Name", entry["Id"][:12]))
        return {i: s for i in ids if (s := self.intervals.get(i)) is not None}

    def reap(self) -> None:
        for container, check in list(self.checks.items()):
            if check.poll() is None:
                continue
            del self.checks[container]
            output = (check.stdout.read() if check.stdout else b"").decode(errors="replace")
            status = outcome(check.returncode, output)
            if status != self.outcomes.get(container):
                self.outcomes[container] = status
                print(f"healthchecks: {self.names.get(container, container)}: {status}", flush=True)

    def step(self, now: float, refresh: bool) -> None:
        self.reap()
        if refresh:
            self.schedule.track(self.running(), now)
        for container in self.schedule.take_due(now, busy=self.checks):
            self.checks[container] = subprocess.Popen(
                [self.podman, "healthcheck", "run", container],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )

    def stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        scope = f"compose project {self.project}" if self.project else "every container"
        print(f"healthchecks: running the healthchecks of {scope}", flush=True)
        refreshed = -REFRESH_S
        while not self.stopping:
            now = time.monotonic()
            refresh = now - refreshed >= REFRESH_S
            if refresh:
                refreshed = now
            try:
                self.step(now, refresh)
            except subprocess.CalledProcessError as e:  # podman itself failed: say so, go on
                print(f"healthchecks: {' '.join(e.cmd)}: {e.stderr.strip()}", flush=True)
            time.sleep(TICK_S)
        for check in self.checks.values():
            check.kill()
            check.wait()
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", help="only the containers of this compose project")
    parser.add_argument("--podman", default="podman", help="the podman command")
    args = parser.parse_args(argv)
    return Runner(args.podman, args.project).run()


if __name__ == "__main__":
    sys.exit(main())
