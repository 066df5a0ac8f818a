"""The real geo runtime on one machine: every site a process of its own (a site
cluster with its own ranks), joined by shaped, authenticated WAN links on loopback.

The launcher writes each site's job file, starts `atoll site run` per site (the
command an edge agent runs) under the supervisor an edge agent uses (supervise.py),
follows their logs with the same progress fold, restarts a site that dies (it
rejoins from its checkpoint and a mirror's replica), and assembles the job's record
from theirs.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atoll.platform.core.events import (
    LaunchEvent,
    RunEvent,
    SiteAbandoned,
    SiteDied,
    SiteLaunched,
    SiteProgressed,
    TrainingStarted,
)
from atoll.platform.core.runlog import RunLog
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.timeline import AccuracyTimeline
from atoll.platform.net import new_job_secret
from atoll.platform.net.certs import write_job_certificates
from atoll.platform.site.plan import loopback_endpoints, plan_site_jobs
from atoll.platform.site.progress import SiteProgress
from atoll.platform.site.supervise import SiteExit, SiteProcess, after_exit

_POLL_S = 0.2
_STOP_GRACE_S = 30.0
_ORPHAN_GRACE_S = 60.0


@dataclass
class LaunchedSite:
    name: str
    process: SiteProcess
    progress: SiteProgress = field(default_factory=SiteProgress)
    restarts: int = 0
    exit_code: int | None = None  # once it has ended for good
    failure: str | None = None


class GeoLaunch:
    def __init__(
        self,
        job: GeoJob,
        out_dir: Path,
        *,
        tls: bool = False,
        restarts: int = 2,
        sync_timeout_s: float = 300.0,
        on_event: Callable[[LaunchEvent], None] = lambda event: None,
    ) -> None:
        self.job = job
        self.out_dir = out_dir
        self.tls = tls
        self.max_restarts = restarts
        self.sync_timeout_s = sync_timeout_s
        self.on_event = on_event
        self.sites: list[LaunchedSite] = []
        self._stopping: str | None = None
        self._log: RunLog | None = None

    def request_stop(self, reason: str) -> None:
        """Stop every site at its next clock, with a checkpoint (safe from a signal handler)."""
        self._stopping = reason

    def run(self) -> dict[str, Any]:
        wall_start = time.time()
        self._write_site_jobs()
        with RunLog(self.out_dir / "log.jsonl") as log:
            self._log = log
            try:
                for site in self.sites:
                    self._start(site, resume=False)
                self._follow()
            finally:
                self._terminate()
                self._log = None
        return self._summary(time.time() - wall_start)

    def _report(self, event: LaunchEvent) -> None:
        if self._log is not None and not isinstance(event, SiteProgressed):
            self._log.write(event)  # progress is for the caller: the sites' logs have it
        self.on_event(event)

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
        sites_dir = self.out_dir / "sites"
        for name, site_job in site_jobs.items():
            job_file = sites_dir / f"{name}.json"
            job_file.parent.mkdir(parents=True, exist_ok=True)
            job_file.write_text(site_job.model_dump_json(indent=1))
            process = SiteProcess(job_file, sites_dir / name, sites_dir / f"{name}.stderr")
            self.sites.append(LaunchedSite(name, process))

    def _start(self, site: LaunchedSite, resume: bool) -> None:
        pid = site.process.start(resume)
        self._report(SiteLaunched(time=time.time(), site=site.name, pid=pid, resume=resume))

    # -- following the sites ---------------------------------------------------------

    def _follow(self) -> None:
        others_done_at: float | None = None
        while True:
            if self._stopping:
                self._stop_sites()
                return
            for site in self.sites:
                if site.exit_code is None:
                    self._observe(site)
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

    def _abandon(self, sites: list[LaunchedSite]) -> None:
        for site in sites:
            site.process.kill()
            events, code = site.process.poll()
            self._take(site, events)
            site.exit_code = -1 if code is None else code
            site.failure = f"{site.name} was still rejoining when every other site had finished"
            self._report(SiteAbandoned(time=time.time(), site=site.name))

    def _observe(self, site: LaunchedSite) -> None:
        events, code = site.process.poll()
        self._take(site, events)
        if code is None:
            return
        ended = SiteExit(code, site.progress.completed, site.progress.failure)
        decision = after_exit(
            ended,
            stop_sent=False,  # a stop ends the follow loop: _stop_sites sees those exits
            wanted=False,
            failures=site.restarts,
            max_restarts=self.max_restarts,
        )
        if decision.verdict == "restart":
            site.restarts += 1
            how = decision.message or ""
            self._report(SiteDied(time=time.time(), site=site.name, how=how, restarting=True))
            self._start(site, resume=True)
            return
        site.exit_code = code
        if decision.verdict == "failed":
            how = decision.message or ""
            site.failure = f"{site.name} {how}; see {site.process.stderr}"
            self._report(SiteDied(time=time.time(), site=site.name, how=how, restarting=False))

    def _take(self, site: LaunchedSite, events: list[RunEvent]) -> None:
        for event in events:
            took = site.progress.apply(event)
            if took is None and not isinstance(event, TrainingStarted):
                continue
            progress = site.progress
            self._report(
                SiteProgressed(
                    time=time.time(),
                    site=site.name,
                    clock=progress.clock,
                    accuracy=progress.accuracy,
                    wan_bytes=progress.wan_bytes,
                    stall_s=progress.stall_s,
                )
            )

    def _stop_sites(self) -> None:
        running = [s for s in self.sites if s.exit_code is None]
        for site in running:
            site.process.stop()
        deadline = time.monotonic() + _STOP_GRACE_S
        for site in running:
            code = site.process.wait(max(0.1, deadline - time.monotonic()))
            if code is None:
                site.process.kill()
                code = site.process.wait(0)
            self._take(site, site.process.poll()[0])
            site.exit_code = code

    def _terminate(self) -> None:
        for site in self.sites:
            site.process.kill()

    # -- the record ------------------------------------------------------------------

    def _summary(self, wall_s: float) -> dict[str, Any]:
        progress = [s.progress for s in self.sites]
        started = [p.started_at for p in progress if p.started_at is not None]
        t0 = max(started) if started else 0.0  # the moment the last site began training
        timeline = AccuracyTimeline(len(self.sites))
        for index, site in enumerate(progress):
            for point in site.evals:
                when = point.time
                timeline.report(index, point.clock, point.accuracy, when - t0, self._bytes_by(when))
        site_records = [self._site_record(s) for s in self.sites]
        finals = [r["final_accuracy"] for r in site_records if r["final_accuracy"] is not None]
        target = self.job.target_accuracy
        reached = timeline.first_reaching(target) if target else None
        failures = [s.failure for s in self.sites if s.failure]
        links: dict[str, int] = {}
        for site in progress:
            for link, sent in site.link_bytes.items():
                links[link] = links.get(link, 0) + sent
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
            "wan_bytes": sum(p.wan_bytes for p in progress),
            "links": links,
            "stall_s": sum(p.stall_s for p in progress) / len(progress),
            "clocks": max(p.clock for p in progress),
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
            before = [sent for at, sent in site.progress.traffic if at <= when]
            total += before[-1] if before else 0
        return total

    def _site_record(self, site: LaunchedSite) -> dict[str, Any]:
        path = site.process.run_dir / "summary.json"
        summary = json.loads(path.read_text()) if path.exists() else {}
        return {
            "name": site.name,
            "final_accuracy": summary.get("test_accuracy"),
            "clock": site.progress.clock,
            "stall_s": site.progress.stall_s,
            "wan_bytes": site.progress.wan_bytes,
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
