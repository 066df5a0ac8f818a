"""The edge agent's decisions, sans I/O: its state, one input at a time (steps.py), and the
effects the agent carries out for it, in order.

A site's part in a job (a LocalJob) goes starting -> running -> finished | failed, or
stopped (with a checkpoint, to be resumed) or cancelled. `stop_reason` says what a stop
in progress (or done) is for: cancel, drain, remove, shutdown. A job whose site is asked
to stop keeps its reason until the site has exited; activating the agent again clears
a drain's or a remove's reason, and the site is then started again as soon as it has
stopped. Once the agent shuts down, no site is started again: what it stopped then
resumes when the agent starts next.
"""

from collections.abc import Callable
from dataclasses import dataclass

from atoll.edge.ledger import CommandLedger
from atoll.edge.state import AgentFile, LocalJob
from atoll.edge.steps import (
    Abort,
    Ack,
    CommandArrived,
    Effect,
    Input,
    Kill,
    Launch,
    Launched,
    Moment,
    Note,
    Recover,
    RegistryJoined,
    ReportToRegistry,
    SaveLedger,
    SaveState,
    SendTelemetry,
    SignalReceived,
    SiteEnded,
    SiteLogged,
    Stop,
    Tick,
    WriteJobFiles,
)
from atoll.platform.bus.messages import (
    AgentState,
    AppliedCommand,
    Command,
    CommandKind,
    JobReport,
    Outcome,
    Telemetry,
)
from atoll.platform.bus.signing import CommandVerifier
from atoll.platform.core.events import TrainingStarted, is_site_event
from atoll.platform.site.progress import SiteProgress
from atoll.platform.site.supervise import SiteExit, after_exit

RESUMABLE_STOPS = ("drain", "shutdown", "remove")
_REPORTED_JOBS = 20  # finished jobs still listed in status reports

Applied = tuple[Outcome, str, list[Effect]]


@dataclass(frozen=True)
class Limits:
    max_restarts: int  # a failed site is resumed this many times
    stop_timeout_s: float  # a site asked to stop is killed if it has not by then
    telemetry_interval_s: float  # at most one step sample per this
    registry: bool  # whether accuracy goes to a registry
    has_data: bool = False  # its site.yaml names data of its own


@dataclass
class Running:
    """A job whose site process runs."""

    stop_sent: bool = False
    stop_deadline: float = float("inf")  # monotonic
    kill_sent: bool = False
    last_step_sample: float = float("-inf")  # monotonic


class AgentCore:
    def __init__(
        self,
        site: str,
        limits: Limits,
        file: AgentFile,
        ledger: CommandLedger,
        commands: CommandVerifier,
    ) -> None:
        self.site = site
        self.commands = commands  # the control plane's key: only what it signed is applied
        self.limits = limits
        self.file = file  # what is saved: the jobs, draining/removed, the registry id
        self.ledger = ledger
        self.running: dict[str, Running] = {}
        self.progress: dict[str, SiteProgress] = {}
        self.signal: str | None = None  # the first signal that asked the agent to stop
        self.shutting_down = False
        self._commands: dict[CommandKind, Callable[[Command, Moment], Applied]] = {
            "start_job": self._start_job,
            "cancel_job": self._cancel_job,
            "drain": self._drain,
            "activate": self._activate,
            "remove": self._remove,
        }

    @property
    def state(self) -> AgentState:
        if self.file.removed:
            return "removed"
        if self.file.draining or self.shutting_down:
            return "draining"
        return "running" if self.running else "idle"

    @property
    def done(self) -> bool:
        """Shut down, with every site stopped: the agent may exit."""
        return self.shutting_down and not self.running

    def handle(self, event: Input) -> list[Effect]:
        effects: list[Effect]
        match event:
            case Recover():
                effects = self._recover(event)
            case CommandArrived():
                effects = self._command(event)
            case Launched():
                self.file.jobs[event.job_id].pid = event.pid
                effects = [SaveState()]
            case SiteLogged():
                effects = self._logged(event)
            case SiteEnded():
                effects = self._ended(event)
            case Tick():
                effects = self._tick(event.at)
            case SignalReceived():
                effects = self._signal(event)
            case RegistryJoined():
                self.file.registry_id = event.site_id
                effects = [SaveState()]
            case Abort():
                effects = self._abort()
        return effects

    # -- start and recovery --------------------------------------------------------------

    def _recover(self, event: Recover) -> list[Effect]:
        """Rebuild each job's progress from its log; resume what was running (killed with the
        last agent) or stopped by its shutdown."""
        effects: list[Effect] = []
        for job_id, job in self.file.jobs.items():
            progress = self.progress[job_id] = SiteProgress()
            for logged in event.logs.get(job_id, ()):
                progress.apply(logged)
            if not (job.active or (job.state == "stopped" and job.stop_reason == "shutdown")):
                continue
            job.pid = None
            if job.stop_reason == "cancel":
                job.state = "cancelled"  # it was being cancelled when the agent died
            elif self.file.draining or self.file.removed:
                job.state, job.stop_reason = "stopped", job.stop_reason or "drain"
            else:
                effects.append(Note("info", f"resuming job {job_id} from its checkpoint"))
                job.restarts += 1
                effects += self._launch(job, resume=True)
        return [*effects, SaveState()]

    # -- commands ----------------------------------------------------------------------------

    def _command(self, arrived: CommandArrived) -> list[Effect]:
        """Apply a command once, however often it is delivered, then acknowledge it."""
        command = arrived.command
        if command is None or command.site != self.site:
            return [Ack(arrived.entry_id)]  # unreadable, or not for this site: never will be
        problem = self.commands.problem(command, arrived.at.wall)
        if problem is not None:
            refused = f"refused {command.kind} command {command.id} for site {self.site}: {problem}"
            return [Note("warning", refused), Ack(arrived.entry_id)]
        if self.ledger.seen(command.id) is not None:
            return [SaveLedger(), Ack(arrived.entry_id)]  # the duplicate count
        outcome, detail, effects = self._commands[command.kind](command, arrived.at)
        self.ledger.record(AppliedCommand(
            id=command.id, kind=command.kind, outcome=outcome, detail=detail, at=arrived.at.wall
        ))  # fmt: skip
        note = Note("info", f"{command.kind} {command.id}: {outcome} {detail}")
        # The ledger is saved before the ack: what was acknowledged is in it.
        return [*effects, note, SaveLedger(), Ack(arrived.entry_id)]

    def _start_job(self, command: Command, at: Moment) -> Applied:
        job_id, start = command.job_id, command.start
        if job_id is None or start is None:
            return "refused", "a start_job command needs a job id and its start", []
        if job_id in self.file.jobs:
            return "ignored", f"job {job_id} is already {self.file.jobs[job_id].state} here", []
        if self.file.removed:
            return "refused", "this site was removed; activate it first", []
        if start.own_data and not self.limits.has_data:
            return "refused", "the job trains on each site's own data; this site has none", []
        busy = next((j for j in self.file.jobs.values() if j.active), None)
        if busy is not None:
            return "refused", f"busy with job {busy.job_id}", []
        job = self.file.jobs[job_id] = LocalJob(
            job_id=job_id,
            name=start.job_name,
            state="starting",
            created_at=at.wall,
            clocks=start.clocks,
            kind=start.kind,
        )
        self.progress[job_id] = SiteProgress()
        effects: list[Effect] = [WriteJobFiles(job_id, start)]
        if self.file.draining:
            job.state, job.stop_reason = "stopped", "drain"
            detail = "stopped: the site is draining; it starts when activated"
        elif self.shutting_down:
            job.state, job.stop_reason = "stopped", "shutdown"
            detail = "stopped: the agent is shutting down; it starts when the agent is back"
        else:
            effects += self._launch(job, resume=False)
            detail = "started"
        return "applied", detail, [*effects, SaveState()]

    def _cancel_job(self, command: Command, at: Moment) -> Applied:
        job_id = command.job_id or ""
        job = self.file.jobs.get(job_id)
        if job is None:
            # Remembered, so that a start that arrives late is not taken up.
            self.file.jobs[job_id] = LocalJob(
                job_id=job_id, state="cancelled", created_at=at.wall, message="cancelled"
            )
            return "applied", "cancelled before it started", [SaveState()]
        if job.state in ("finished", "failed", "cancelled"):
            return "ignored", f"job {job_id} is already {job.state}", []
        if job_id in self.running:
            job.stop_reason = "cancel"
            return "applied", "stopping at the next clock", [*self._stop(job_id, at), SaveState()]
        job.state, job.stop_reason = "cancelled", "cancel"
        return "applied", "cancelled", [SaveState()]

    def _drain(self, _command: Command, at: Moment) -> Applied:
        if self.file.draining:
            return "ignored", "already draining", []
        self.file.draining = True
        return "applied", "draining", self._stop_all("drain", at)

    def _remove(self, _command: Command, at: Moment) -> Applied:
        if self.file.removed:
            return "ignored", "already removed", []
        self.file.removed = self.file.draining = True
        return "applied", "removed: takes no jobs until activated", self._stop_all("remove", at)

    def _activate(self, _command: Command, _at: Moment) -> Applied:
        if not (self.file.draining or self.file.removed):
            return "ignored", "already active", []
        self.file.draining = self.file.removed = False
        if self.shutting_down:
            # Nothing starts on the way out: what it would resume now resumes at its next start.
            for job in self.file.jobs.values():
                stopping = job.job_id in self.running
                if job.stop_reason in ("drain", "remove") and (stopping or job.state == "stopped"):
                    job.stop_reason = "shutdown"
            return "applied", "active; its jobs resume when the agent starts again", [SaveState()]
        effects: list[Effect] = []
        resumed = []
        for job in self.file.jobs.values():
            if job.job_id in self.running:
                if job.stop_reason in ("drain", "remove"):
                    job.stop_reason = None  # still stopping: started again once it has
                    resumed.append(f"{job.job_id} (once stopped)")
            elif job.state == "stopped" and job.stop_reason in RESUMABLE_STOPS:
                job.restarts += 1
                effects += self._launch(job, resume=True)
                resumed.append(job.job_id)
        detail = f"active; resumed {', '.join(resumed) or 'nothing'}"
        return "applied", detail, [*effects, SaveState()]

    # -- site processes ----------------------------------------------------------------------

    def _launch(self, job: LocalJob, resume: bool) -> list[Effect]:
        assert not self.shutting_down, "no site is started once the agent shuts down"
        job.state, job.stop_reason, job.pid = "starting", None, None
        self.running[job.job_id] = Running()
        if not resume:
            self.progress[job.job_id] = SiteProgress()  # the run folder starts afresh
        return [Launch(job.job_id, resume)]

    def _stop(self, job_id: str, at: Moment) -> list[Effect]:
        running = self.running[job_id]
        running.stop_sent = True
        running.stop_deadline = min(running.stop_deadline, at.mono + self.limits.stop_timeout_s)
        return [Stop(job_id)]

    def _kill(self, job_id: str) -> list[Effect]:
        running = self.running[job_id]
        if running.kill_sent:
            return []
        running.stop_sent = running.kill_sent = True
        return [Kill(job_id)]

    def _stop_all(self, reason: str, at: Moment) -> list[Effect]:
        effects: list[Effect] = []
        for job_id in self.running:
            job = self.file.jobs[job_id]
            if job.stop_reason != "cancel":
                job.stop_reason = reason
            effects += self._stop(job_id, at)
        return [*effects, SaveState()]

    def _ended(self, ended: SiteEnded) -> list[Effect]:
        job = self.file.jobs[ended.job_id]
        running = self.running.pop(ended.job_id)
        progress = self.progress.setdefault(ended.job_id, SiteProgress())
        failure = progress.failure or ended.last_error
        decision = after_exit(
            SiteExit(ended.code, progress.completed, failure),
            stop_sent=running.stop_sent,
            wanted=job.stop_reason is None,
            failures=job.failures,
            max_restarts=self.limits.max_restarts,
        )
        job.pid = None
        effects: list[Effect] = []
        match decision.verdict:
            case "finished":
                job.state, job.message = "finished", None
            case "stopped":
                job.state = "cancelled" if job.stop_reason == "cancel" else "stopped"
            case "resume":
                job.restarts += 1
                effects += self._launch(job, resume=True)
            case "restart":
                effects.append(Note("warning", f"job {job.job_id} {decision.message}; resuming"))
                job.failures += 1
                job.restarts += 1
                job.message = decision.message
                effects += self._launch(job, resume=True)
            case "failed":
                effects.append(Note("warning", f"job {job.job_id} failed: {decision.message}"))
                job.state, job.message = "failed", decision.message
        return [*effects, SaveState()]

    def _logged(self, logged: SiteLogged) -> list[Effect]:
        job, event = self.file.jobs[logged.job_id], logged.event
        if not is_site_event(event):
            return []  # a site's log holds nothing else
        progress = self.progress.setdefault(job.job_id, SiteProgress())
        sample = progress.apply(event)
        effects: list[Effect] = []
        if isinstance(event, TrainingStarted):
            # The site's own account of its data and model: what goes to the registry.
            job.class_priors = [float(c) for c in event.class_counts or []]
            job.samples = event.samples or 0
            job.model_signature = event.model_signature or ""
            if job.state == "starting":
                job.state = "running"
            effects.append(SaveState())
        if sample is None:
            return effects
        running = self.running.get(job.job_id)
        if sample == "step":
            interval = self.limits.telemetry_interval_s
            if running is None or logged.at.mono - running.last_step_sample < interval:
                return effects
            running.last_step_sample = logged.at.mono
        effects.append(
            SendTelemetry(
                Telemetry(
                    site=self.site,
                    job_id=job.job_id,
                    time=event.time,
                    kind=sample,
                    clock=progress.clock,
                    loss=progress.loss,
                    accuracy=progress.accuracy,
                    wan_bytes=progress.wan_bytes,
                    stall_s=progress.stall_s,
                )
            )
        )
        accuracy = progress.final_accuracy if sample == "end" else progress.accuracy
        # A cartel site reports to the registry itself: its priors over a recent window,
        # its drift flag, at its own pace.
        reports = self.limits.registry and job.kind == "geo"
        if reports and sample in ("eval", "end") and accuracy is not None:
            effects.append(
                ReportToRegistry(
                    job.class_priors,
                    accuracy,
                    job.samples,
                    job.model_signature,
                    f"{job.job_id}.{progress.clock}",
                )
            )
        return effects

    def _tick(self, at: Moment) -> list[Effect]:
        effects: list[Effect] = []
        for job_id, running in self.running.items():
            if at.mono > running.stop_deadline and not running.kill_sent:
                effects.append(Note("warning", f"job {job_id} did not stop in time; killing it"))
                effects += self._kill(job_id)
        return effects

    # -- stopping the agent ----------------------------------------------------------------

    def _signal(self, received: SignalReceived) -> list[Effect]:
        effects: list[Effect] = []
        if not self.shutting_down:
            # Drain: every site finishes its clock and checkpoints; their jobs resume next start.
            self.shutting_down = True
            effects.append(Note("info", f"stopping at the next clock boundary ({received.name})"))
            for job_id in self.running:
                job = self.file.jobs[job_id]
                job.stop_reason = job.stop_reason or "shutdown"
                effects += self._stop(job_id, received.at)
            effects.append(SaveState())
        elif received.name == "SIGINT" and self.signal is not None:
            for job_id in self.running:  # a second Ctrl-C: do not wait for the clock to end
                effects += self._kill(job_id)
        self.signal = self.signal or received.name
        return effects

    def _abort(self) -> list[Effect]:
        self.shutting_down = True
        effects: list[Effect] = []
        for job_id in self.running:
            job = self.file.jobs[job_id]
            job.stop_reason = job.stop_reason or "shutdown"
            effects += self._kill(job_id)
        return [*effects, SaveState()]

    # -- what it reports ---------------------------------------------------------------------

    def job_reports(self) -> list[JobReport]:
        """Every job not yet over, and the last jobs that are."""
        jobs = sorted(self.file.jobs.values(), key=lambda j: j.created_at)
        listed = [j for j in jobs if j.state in ("starting", "running", "stopped")]
        listed += [j for j in jobs if j not in listed][-_REPORTED_JOBS:]
        return [self._report(j) for j in listed]

    def _report(self, job: LocalJob) -> JobReport:
        progress = self.progress.get(job.job_id) or SiteProgress()
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
            samples=job.samples or None,
            params=progress.started.params if progress.started else None,
            bsp_bytes_per_clock=progress.started.bsp_bytes_per_clock if progress.started else None,
        )
