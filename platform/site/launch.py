"""The real geo runtime on one machine: every site a process of its own (a site
cluster with its own ranks), joined by shaped, authenticated WAN links on loopback.

The launcher writes each site's job file, starts `atoll site run` per site (the
command an edge agent runs), follows their logs, restarts a site that dies (it
rejoins from its checkpoint and a mirror's replica), and assembles the job's
record from theirs.
"""

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.platform.core.runlog import RunLog
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.plan import loopback_endpoints, plan_site_jobs
from atoll.platform.geo.timeline import AccuracyTimeline
from atoll.platform.net import new_job_secret
from atoll.platform.net.certs import write_job_certificates

Event = dict[str, Any]
_POLL_S = 0.2
_STOP_GRACE_S = 30.0
_ORPHAN_GRACE_S = 60.0


@dataclass
class SiteProcess:
    name: str
    job_file: Path
    out_dir: Path
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    log_offset: int = 0
    started_at: float | None = None  # wall time its training began (first start)
    clock: int = 0
    accuracy: float | None = None
    bytes_sent: dict[tuple[int, int, int], int] = field(default_factory=dict)  # by incarnation
    links: dict[str, int] = field(default_factory=dict)
    stall_s: float = 0.0
    evals: list[tuple[int, float, float]] = field(default_factory=list)  # clock, accuracy, time
    traffic: list[tuple[float, int]] = field(default_factory=list)  # time, bytes sent so far
    exit_code: int | None = None
    failure: str | None = None

    @property
    def wan_bytes(self) -> int:
        return sum(self.bytes_sent.values())


class GeoLaunch:
    def __init__(
        self,
        job: GeoJob,
        out_dir: Path,
        *,
        tls: bool = False,
        restarts: int = 2,
        sync_timeout_s: float = 300.0,
        on_event: Callable[[Event], None] = lambda event: None,
    ) -> None:
        self.job = job
        self.out_dir = out_dir
        self.tls = tls
        self.max_restarts = restarts
        self.sync_timeout_s = sync_timeout_s
        self.on_event = on_event
        self.sites: list[SiteProcess] = []
        self._stopping: str | None = None

    def request_stop(self, reason: str) -> None:
        """Stop every site at its next clock, with a checkpoint (safe from a signal handler)."""
        self._stopping = reason

    def run(self) -> dict[str, Any]:
        wall_start = time.time()
        self._write_site_jobs()
        with RunLog(self.out_dir / "log.jsonl") as log:
            report = self.on_event

            def record(event: Event) -> None:
                if event["kind"] != "progress":  # the sites' own logs have the detail
                    log.write({"time": time.time(), **event})
                report(event)

            self.on_event = record
            try:
                for site in self.sites:
                    self._start(site, resume=False)
                self._follow()
            finally:
                self._terminate()
                self.on_event = report
        return self._summary(time.time() - wall_start)

    # -- setting up ------------------------------------------------------------------

    def _write_site_jobs(self) -> None:
        names = self.job.topologies()[0].sites
        secret_file = (self.out_dir / "secret").resolve()
        secret_file.touch(mode=0o600)
        secret_file.write_text(new_job_secret())
        tls_dir = None
        if self.tls:
            tls_dir = (self.out_dir / "tls").resolve()
            write_job_certificates(tls_dir, names, job=self.out_dir.name)
        site_jobs = plan_site_jobs(
            self.job,
            loopback_endpoints(names, self.job.shards, self.tls),
            secret_file,
            tls_dir=tls_dir,
            sync_timeout_s=self.sync_timeout_s,
            threads=1,  # every site shares this machine's cores
        )
        for name, site_job in site_jobs.items():
            job_file = self.out_dir / "sites" / f"{name}.json"
            job_file.parent.mkdir(parents=True, exist_ok=True)
            job_file.write_text(site_job.model_dump_json(indent=1))
            self.sites.append(SiteProcess(name, job_file, self.out_dir / "sites" / name))

    def _start(self, site: SiteProcess, resume: bool) -> None:
        command = [sys.executable, "-m", "atoll.cli", "site", "run", "--job", str(site.job_file)]
        command += ["--out", str(site.out_dir)] + (["--resume"] if resume else [])
        site.out_dir.mkdir(parents=True, exist_ok=True)
        with (self.out_dir / "sites" / f"{site.name}.stderr").open("ab") as stderr:
            site.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        self.on_event(
            {"kind": "site_started", "site": site.name, "pid": site.process.pid, "resume": resume}
        )

    # -- following the sites ---------------------------------------------------------

    def _follow(self) -> None:
        others_done_at: float | None = None
        while True:
            if self._stopping:
                self._stop_sites()
                return
            for site in self.sites:
                self._read_log(site)
                self._check_exit(site)
            running = [s for s in self.sites if s.exit_code is None]
            if not running:
                return
            # A site restarted so late that every other one has finished can rejoin no
            # one: after a grace period it is stopped, and the job ends without it.
            if all(s.exit_code == 0 for s in self.sites if s.exit_code is not None):
                if others_done_at is None and len(running) < len(self.sites):
                    others_done_at = time.monotonic()
                if (
                    others_done_at is not None
                    and time.monotonic() - others_done_at > _ORPHAN_GRACE_S
                ):
                    self._abandon(running)
            time.sleep(_POLL_S)

    def _abandon(self, sites: list[SiteProcess]) -> None:
        for site in sites:
            if site.process is not None and site.process.poll() is None:
                site.process.kill()
                site.process.wait()
            site.exit_code = site.process.returncode if site.process else -1
            site.failure = f"{site.name} was still rejoining when every other site had finished"
            self.on_event({"kind": "site_abandoned", "site": site.name})

    def _read_log(self, site: SiteProcess) -> None:
        path = site.out_dir / "log.jsonl"
        if not path.exists():
            return
        with path.open("rb") as f:
            f.seek(site.log_offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        site.log_offset += len(complete)
        for line in complete.splitlines():
            self._handle(site, json.loads(line))

    def _handle(self, site: SiteProcess, event: Event) -> None:
        kind = event["kind"]
        if kind == "started" and site.started_at is None:
            site.started_at = event["time"]
        elif kind == "step":
            site.clock = event["step"]
        elif kind == "eval":
            site.accuracy = event["test_accuracy"]
            site.evals.append((event["step"], event["test_accuracy"], event["time"]))
        elif kind == "geo":
            # Counters start again in a restarted site: keep each incarnation's total.
            site.bytes_sent[(site.restarts, event["rank"], event["shard"])] = event["bytes_sent"]
            for link, sent in event["links"].items():
                site.links[f"{link}#{event['shard']}#{site.restarts}"] = sent
            site.stall_s = max(site.stall_s, event["stall_s"])
            site.traffic.append((event["time"], site.wan_bytes))
        else:
            return
        self.on_event(
            {
                "kind": "progress",
                "site": site.name,
                "clock": site.clock,
                "accuracy": site.accuracy,
                "wan_bytes": site.wan_bytes,
                "stall_s": site.stall_s,
            }
        )

    def _check_exit(self, site: SiteProcess) -> None:
        if site.process is None or site.exit_code is not None:
            return
        code = site.process.poll()
        if code is None:
            return
        if code == 0 or self._stopping:
            site.exit_code = code
            return
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        if site.restarts < self.max_restarts:
            site.restarts += 1
            self.on_event({"kind": "site_died", "site": site.name, "how": how, "restarting": True})
            self._start(site, resume=True)
            return
        site.exit_code = code
        site.failure = f"{site.name} {how}; see {self.out_dir / 'sites' / (site.name + '.stderr')}"
        self.on_event({"kind": "site_died", "site": site.name, "how": how, "restarting": False})

    def _stop_sites(self) -> None:
        for site in self.sites:
            if site.process and site.process.poll() is None:
                site.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_S
        for site in self.sites:
            if site.process:
                try:
                    site.process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    site.process.kill()
                site.exit_code = site.process.returncode
            self._read_log(site)

    def _terminate(self) -> None:
        for site in self.sites:
            if site.process and site.process.poll() is None:
                site.process.kill()
                site.process.wait()

    # -- the record ------------------------------------------------------------------

    def _summary(self, wall_s: float) -> dict[str, Any]:
        started = [s.started_at for s in self.sites if s.started_at is not None]
        t0 = max(started) if started else 0.0  # the moment the last site began training
        timeline = AccuracyTimeline(len(self.sites))
        for index, site in enumerate(self.sites):
            for clock, accuracy, when in site.evals:
                timeline.report(index, clock, accuracy, when - t0, self._bytes_by(when))
        site_records = [self._site_record(s) for s in self.sites]
        finals = [r["final_accuracy"] for r in site_records if r["final_accuracy"] is not None]
        target = self.job.target_accuracy
        reached = timeline.first_reaching(target) if target else None
        failures = [s.failure for s in self.sites if s.failure]
        links: dict[str, int] = {}
        for site in self.sites:
            for link, sent in site.links.items():
                name = link.split("#")[0]
                links[name] = links.get(name, 0) + sent
        return {
            "runtime": "real",
            "status": "stopped" if self._stopping else "failed" if failures else "completed",
            "failures": failures,
            "policy": self.job.geo.label,
            "final_accuracy": sum(finals) / len(finals) if finals else None,
            "min_site_accuracy": min(finals) if finals else None,
            "target_accuracy": target,
            "time_to_target_s": reached.time_s if reached else None,
            "clocks_to_target": reached.clock if reached else None,
            "time_kind": "wall",
            "wan_bytes": sum(s.wan_bytes for s in self.sites),
            "links": links,
            "stall_s": sum(s.stall_s for s in self.sites) / len(self.sites),
            "clocks": max(s.clock for s in self.sites),
            "wall_s": wall_s,
            "compute_profile": self._compute_profile(site_records),
            "sites": site_records,
            "timeline": [p.__dict__ for p in timeline.points],
            "config": self.job.model_dump(mode="json"),
        }

    def _bytes_by(self, when: float) -> int:
        """WAN bytes all sites had sent by wall time `when`, from their last report before it."""
        total = 0
        for site in self.sites:
            before = [sent for at, sent in site.traffic if at <= when]
            total += before[-1] if before else 0
        return total

    def _site_record(self, site: SiteProcess) -> dict[str, Any]:
        path = site.out_dir / "summary.json"
        summary = json.loads(path.read_text()) if path.exists() else {}
        return {
            "name": site.name,
            "final_accuracy": summary.get("test_accuracy"),
            "clock": site.clock,
            "stall_s": site.stall_s,
            "wan_bytes": site.wan_bytes,
            "restarts": site.restarts,
            "train_s": summary.get("train_s"),
            "exit_code": site.exit_code,
        }

    def _compute_profile(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Seconds of non-waiting work per clock at each site, for the simulator to replay."""
        per_site = {
            r["name"]: (r["train_s"] - r["stall_s"]) / r["clock"]
            for r in records
            if r["train_s"] and r["clock"]
        }
        step = sum(per_site.values()) / len(per_site) if per_site else None
        return {"step_s": step, "sites": per_site}
