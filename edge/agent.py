"""The edge agent: one per site. It takes commands from its stream, runs the site's part
of each job as an `atoll site run` process, follows its log, and tells the others:
the control plane (status and telemetry over Redis), the registry (class priors and
accuracy), everyone (a heartbeat).

The main thread owns the state and the site processes; Redis and the registry each
have a thread of their own, so neither being away holds anything else up. On SIGTERM
the agent shows itself draining, lets the site finish its clock and checkpoint,
records the job as stopped, and exits; started again, it resumes the job from that
checkpoint. Killed outright, it takes its site with it, and resumes the same way.
"""

import logging
import queue
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from uuid import uuid4

from atoll.edge.bus_link import BusLink
from atoll.edge.config import EdgeSettings
from atoll.edge.progress import SiteProgress
from atoll.edge.registry_link import RegistryLink
from atoll.edge.site_process import LogTail, SiteProcess, kill_stale
from atoll.edge.state import AgentFile, LocalJob, StateDir
from atoll.edge.supervisor import after_exit
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import (
    AgentStatus,
    AppliedCommand,
    Beat,
    Command,
    JobReport,
    Outcome,
    Telemetry,
)

log = logging.getLogger("atoll.edge")
_TICK_S = 0.2
_FLUSH_S = 5.0  # at exit, how long to wait for the last status to reach Redis
_REPORTED_JOBS = 20  # finished jobs still listed in status reports
RESUMABLE_STOPS = ("drain", "shutdown", "remove")
EXIT_ON_SIGNAL = {"SIGINT": 130, "SIGTERM": 143}


@dataclass
class Running:
    process: SiteProcess
    last_step_sample: float = 0.0
    stop_deadline: float = float("inf")  # a site asked to stop is killed if it has not by then

    def stop(self, timeout_s: float) -> None:
        self.process.stop()
        self.stop_deadline = min(self.stop_deadline, time.monotonic() + timeout_s)


@dataclass
class Tracked:
    """A job's log and what it says, for every job the agent knows."""

    tail: LogTail
    progress: SiteProgress = field(default_factory=SiteProgress)


class EdgeAgent:
    def __init__(self, settings: EdgeSettings) -> None:
        self.settings = settings
        self.site = settings.name
        self.dirs = StateDir(settings.state_dir)
        self.file: AgentFile = self.dirs.load()
        self.ledger = self.dirs.load_ledger()
        self.incarnation = uuid4().hex
        self.bus = Bus(settings.redis_url.get_secret_value(), BusKeys(settings.redis_prefix))
        self.link = BusLink(self.bus, self.site, settings.heartbeat_s, settings.telemetry_maxlen)
        self.registry = (
            RegistryLink(settings, self.dirs, self.file.registry_id)
            if settings.registry_url
            else None
        )
        self.running: dict[str, Running] = {}
        self.tracked: dict[str, Tracked] = {}
        self.signal: str | None = None
        self.shutting_down = False
        self._seq = 0
        self._last_status: AgentStatus | None = None
        self._stop_threads = threading.Event()
        self._kill_now = False

    # -- the loop --------------------------------------------------------------------

    def run(self) -> int:
        threads = [threading.Thread(target=self.link.run, args=(self._stop_threads,), daemon=True)]
        if self.registry is not None:
            threads.append(
                threading.Thread(target=self.registry.run, args=(self._stop_threads,), daemon=True)
            )
        with self._signals_stop():
            for thread in threads:
                thread.start()
            log.info("agent %s up (%s)", self.site, self.settings.state_dir)
            try:
                self._recover()
                while not (self.shutting_down and not self.running):
                    if self.signal and not self.shutting_down:
                        self._begin_shutdown()
                    if self._kill_now:
                        self._kill_sites()
                    self._take_commands(_TICK_S)
                    self._supervise()
                    self._share_status()
            finally:
                self.shutting_down = True  # nothing is started again from here on
                self._kill_sites()
                self._share_status()
                deadline = time.monotonic() + _FLUSH_S
                while not self.link.flushed() and time.monotonic() < deadline:
                    time.sleep(0.05)
                self._stop_threads.set()
                for thread in threads:
                    thread.join(timeout=_FLUSH_S)
                self.bus.close()
        return EXIT_ON_SIGNAL.get(self.signal or "", 0)

    def request_stop(self, reason: str) -> None:
        if self.signal is not None and reason == "SIGINT":
            self._kill_now = True  # a second Ctrl-C: do not wait for the clock to end
        self.signal = self.signal or reason

    @contextmanager
    def _signals_stop(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_signal(signum: int, _frame: object) -> None:
            self.request_stop(signal.Signals(signum).name)

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _begin_shutdown(self) -> None:
        """Drain: every site finishes its clock and checkpoints; their jobs resume next start."""
        self.shutting_down = True
        log.info("%s: stopping at the next clock boundary (%s)", self.site, self.signal)
        for job_id, running in self.running.items():
            job = self.file.jobs[job_id]
            job.stop_reason = job.stop_reason or "shutdown"
            running.stop(self.settings.stop_timeout_s)
        self._save()

    def _kill_sites(self) -> None:
        for job_id, running in list(self.running.items()):
            running.process.kill()
            self._supervise_one(job_id, running)

    # -- recovery ----------------------------------------------------------------------

    def _recover(self) -> None:
        """Pick up where the last incarnation left off: rebuild each job's progress from its
        log; resume what was running (killed with the agent) or stopped by a shutdown."""
        for job_id, job in self.file.jobs.items():
            tracked = Tracked(LogTail(self.dirs.run_dir(job_id) / "log.jsonl"))
            for event in tracked.tail.read():
                tracked.progress.apply(event)
            self.tracked[job_id] = tracked
            resume = job.active or (job.state == "stopped" and job.stop_reason == "shutdown")
            if not resume:
                continue
            kill_stale(job.pid, self.dirs.run_dir(job_id))
            if job.stop_reason == "cancel":
                job.state = "cancelled"  # it was being cancelled when the agent died
            elif self.file.draining or self.file.removed:
                job.state, job.stop_reason = "stopped", job.stop_reason or "drain"
            else:
                log.info("%s: resuming job %s from its checkpoint", self.site, job_id)
                job.restarts += 1
                self._launch(job, resume=True)
        self._save()

    # -- commands ----------------------------------------------------------------------

    def _take_commands(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                entry_id, command = self.link.commands.get(timeout=left)
            except queue.Empty:
                return
            self.apply(entry_id, command)

    def apply(self, entry_id: str, command: Command | None) -> None:
        """Apply a command once, however often it is delivered, then acknowledge it."""
        if command is None or command.site != self.site:
            self.link.ack(entry_id)  # unreadable, or not for this site: never will be
            return
        if self.ledger.seen(command.id) is not None:
            self.dirs.save_ledger(self.ledger)  # the duplicate count
            self.link.ack(entry_id)
            return
        handlers: dict[str, Callable[[Command], tuple[Outcome, str]]] = {
            "start_job": self._start_job,
            "cancel_job": self._cancel_job,
            "drain": self._drain,
            "activate": self._activate,
            "remove": self._remove,
        }
        outcome, detail = handlers[command.kind](command)
        log.info("%s: %s %s: %s %s", self.site, command.kind, command.id, outcome, detail)
        self.ledger.record(AppliedCommand(
            id=command.id, kind=command.kind, outcome=outcome, detail=detail, at=time.time()
        ))  # fmt: skip
        self.dirs.save_ledger(self.ledger)  # before the ack: what was acknowledged is in it
        self.link.ack(entry_id)

    def _start_job(self, command: Command) -> tuple[Outcome, str]:
        job_id, start = command.job_id, command.start
        if job_id is None or start is None:
            return "refused", "a start_job command needs a job id and its start"
        if job_id in self.file.jobs:
            return "ignored", f"job {job_id} is already {self.file.jobs[job_id].state} here"
        if self.file.removed:
            return "refused", "this site was removed; activate it first"
        busy = next((j for j in self.file.jobs.values() if j.active), None)
        if busy is not None:
            return "refused", f"busy with job {busy.job_id}"
        s = self.settings
        self.dirs.write_job(
            job_id, self.site, start.site_job, start.secret, start.tls, s.data_dir, s.threads
        )
        job = LocalJob(
            job_id=job_id,
            name=start.job_name,
            state="starting",
            created_at=time.time(),
            class_priors=start.class_priors,
            samples=start.samples,
            model_signature=start.model_signature,
            clocks=start.clocks,
        )
        self.file.jobs[job_id] = job
        self.tracked[job_id] = Tracked(LogTail(self.dirs.run_dir(job_id) / "log.jsonl"))
        if self.file.draining or self.shutting_down:
            job.state, job.stop_reason = "stopped", "drain" if self.file.draining else "shutdown"
            self._save()
            return "applied", "stopped: the site is draining; it starts when activated"
        self._launch(job, resume=False)
        self._save()
        return "applied", "started"

    def _cancel_job(self, command: Command) -> tuple[Outcome, str]:
        job_id = command.job_id or ""
        job = self.file.jobs.get(job_id)
        if job is None:
            # Remembered, so that a start that arrives late is not taken up.
            self.file.jobs[job_id] = LocalJob(
                job_id=job_id, state="cancelled", created_at=time.time(), message="cancelled"
            )
            self._save()
            return "applied", "cancelled before it started"
        if job.state in ("finished", "failed", "cancelled"):
            return "ignored", f"job {job_id} is already {job.state}"
        if job_id in self.running:
            job.stop_reason = "cancel"
            self.running[job_id].stop(self.settings.stop_timeout_s)
            self._save()
            return "applied", "stopping at the next clock"
        job.state, job.stop_reason = "cancelled", "cancel"
        self._save()
        return "applied", "cancelled"

    def _drain(self, _command: Command) -> tuple[Outcome, str]:
        if self.file.draining:
            return "ignored", "already draining"
        self.file.draining = True
        self._stop_all("drain")
        return "applied", "draining"

    def _remove(self, _command: Command) -> tuple[Outcome, str]:
        if self.file.removed:
            return "ignored", "already removed"
        self.file.removed = self.file.draining = True
        self._stop_all("remove")
        return "applied", "removed: takes no jobs until activated"

    def _activate(self, _command: Command) -> tuple[Outcome, str]:
        if not (self.file.draining or self.file.removed):
            return "ignored", "already active"
        self.file.draining = self.file.removed = False
        resumed = []
        for job in self.file.jobs.values():
            if job.state == "stopped" and job.stop_reason in RESUMABLE_STOPS:
                job.restarts += 1
                self._launch(job, resume=True)
                resumed.append(job.job_id)
        self._save()
        return "applied", f"active; resumed {', '.join(resumed) or 'nothing'}"

    def _stop_all(self, reason: str) -> None:
        for job_id, running in self.running.items():
            job = self.file.jobs[job_id]
            if job.stop_reason != "cancel":
                job.stop_reason = reason
            running.stop(self.settings.stop_timeout_s)
        self._save()

    # -- site processes ----------------------------------------------------------------

    def _launch(self, job: LocalJob, resume: bool) -> None:
        run_dir = self.dirs.run_dir(job.job_id)
        resume = resume and (run_dir / "config.json").exists()
        if not resume and run_dir.exists():
            shutil.rmtree(run_dir)  # a start that died before it wrote anything to resume
        process = SiteProcess(
            self.dirs.site_job_file(job.job_id),
            run_dir,
            self.dirs.job_dir(job.job_id) / "site.stderr",
        )
        process.start(resume)
        job.pid, job.state, job.stop_reason = process.pid, "starting", None
        self.running[job.job_id] = Running(process)
        if resume:  # the log goes on where it was
            self.tracked.setdefault(job.job_id, Tracked(LogTail(run_dir / "log.jsonl")))
        else:
            self.tracked[job.job_id] = Tracked(LogTail(run_dir / "log.jsonl"))

    def _supervise(self) -> None:
        for job_id, running in list(self.running.items()):
            if time.monotonic() > running.stop_deadline:
                log.warning("%s: job %s did not stop in time; killing its site", self.site, job_id)
                running.process.kill()
            self._supervise_one(job_id, running)

    def _supervise_one(self, job_id: str, running: Running) -> None:
        job = self.file.jobs[job_id]
        tracked = self.tracked[job_id]
        code = running.process.poll()
        for event in tracked.tail.read():
            self._follow(job, tracked.progress, running, event)
        if code is None:
            return
        for event in tracked.tail.read():  # what it wrote as it went
            self._follow(job, tracked.progress, running, event)
        del self.running[job_id]
        progress = tracked.progress
        decision = after_exit(
            code,
            stop_requested=job.stop_reason is not None,
            restarts=job.failures,
            max_restarts=self.settings.max_restarts,
            completed=progress.completed,
            failure=progress.failure or running.process.last_error(),
        )
        job.pid = None
        if decision.verdict == "restart" and self.shutting_down:
            job.stop_reason = job.stop_reason or "shutdown"
            decision = replace(decision, verdict="stopped")
        if decision.verdict == "finished":
            job.state, job.message = "finished", None
        elif decision.verdict == "stopped":
            job.state = "cancelled" if job.stop_reason == "cancel" else "stopped"
            if job.state == "stopped" and self.state in ("idle", "running"):
                # Activated again while it was stopping for a drain: it goes on at once.
                job.restarts += 1
                self._launch(job, resume=True)
        elif decision.verdict == "restart":
            log.warning("%s: job %s %s; resuming it", self.site, job_id, decision.message)
            job.failures += 1
            job.restarts += 1
            job.message = decision.message
            self._launch(job, resume=True)
        else:
            log.warning("%s: job %s failed: %s", self.site, job_id, decision.message)
            job.state, job.message = "failed", decision.message
        self._save()

    def _follow(self, job: LocalJob, progress: SiteProgress, running: Running, event: dict) -> None:
        sample = progress.apply(event)
        if event.get("kind") == "started" and job.state == "starting":
            job.state = "running"
            self._save()
        if sample is None:
            return
        now = time.monotonic()
        if sample == "step":
            if now - running.last_step_sample < self.settings.telemetry_interval_s:
                return
            running.last_step_sample = now
        self.link.send_telemetry(
            Telemetry(
                site=self.site,
                job_id=job.job_id,
                time=event.get("time", time.time()),
                kind=sample,
                clock=progress.clock,
                loss=progress.loss,
                accuracy=progress.accuracy,
                wan_bytes=progress.wan_bytes,
                stall_s=progress.stall_s,
            )
        )
        accuracy = progress.final_accuracy if sample == "end" else progress.accuracy
        if self.registry is not None and sample in ("eval", "end") and accuracy is not None:
            self.registry.report(
                job.class_priors,
                accuracy,
                job.samples,
                job.model_signature,
                f"{job.job_id}.{progress.clock}",
            )

    # -- status ------------------------------------------------------------------------

    def _save(self) -> None:
        if self.registry is not None:
            self.file.registry_id = self.registry.site_id
        self.dirs.save(self.file)

    @property
    def state(self) -> str:
        if self.file.removed:
            return "removed"
        if self.file.draining or self.shutting_down:
            return "draining"
        return "running" if self.running else "idle"

    def _share_status(self) -> None:
        if self.registry is not None and self.registry.site_id != self.file.registry_id:
            self._save()
        jobs = sorted(self.file.jobs.values(), key=lambda j: j.created_at)
        listed = [j for j in jobs if j.state in ("starting", "running", "stopped")]
        listed += [j for j in jobs if j not in listed][-_REPORTED_JOBS:]
        status = AgentStatus(
            site=self.site,
            incarnation=self.incarnation,
            seq=self._seq,
            time=0.0,
            state=self.state,
            region=self.settings.region,
            registry_id=self.file.registry_id,
            geo_host=self.settings.geo.host,
            geo_port=self.settings.geo.port,
            geo_ports=self.settings.geo.ports,
            version=_version(),
            jobs=[self._report(j) for j in listed],
            applied=self.ledger.recent(),
            duplicates=self.ledger.duplicates,
        )
        if status == self._last_status:
            return
        self._last_status = status
        self._seq += 1
        stamped = status.model_copy(update={"seq": self._seq, "time": time.time()})
        beat = Beat(time=time.time(), state=self.state, incarnation=self.incarnation)
        self.link.set_status(stamped, beat)

    def _report(self, job: LocalJob) -> JobReport:
        tracked = self.tracked.get(job.job_id)
        progress = tracked.progress if tracked else SiteProgress()
        return JobReport(
            job_id=job.job_id,
            state=job.state,
            clock=progress.clock,
            total_clocks=progress.total_clocks or job.clocks or None,
            accuracy=progress.accuracy,
            final_accuracy=progress.final_accuracy,
            wan_bytes=progress.wan_bytes,
            stall_s=progress.stall_s,
            restarts=job.restarts,
            stop_reason=job.stop_reason,
            message=job.message,
            started_at=progress.started_at,
            finished_at=progress.finished_at if job.state == "finished" else None,
        )


def _version() -> str:
    try:
        return version("atoll")
    except PackageNotFoundError:
        return "0+unknown"
