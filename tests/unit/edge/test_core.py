"""The edge agent's decisions, input by input: what it does (its effects) and what it then
knows (its state)."""

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from atoll.edge import steps
from atoll.edge.core import AgentCore, Limits
from atoll.edge.ledger import CommandLedger
from atoll.edge.state import AgentFile, LocalJob
from atoll.platform.bus.messages import Command, CommandKind, SiteJobState, StartJob
from atoll.platform.bus.signing import CommandSigner, CommandVerifier
from atoll.platform.core.events import (
    Evaluated,
    RunEvent,
    StepDone,
    TrainingFailed,
    TrainingFinished,
    TrainingStarted,
)

LIMITS = Limits(max_restarts=2, stop_timeout_s=10.0, telemetry_interval_s=1.0, registry=True)
START = StartJob(job_name="t", site_job={}, clocks=100)


SIGNER = CommandSigner(Ed25519PrivateKey.generate())
VERIFIER = CommandVerifier(SIGNER.key.public_key())


def at(seconds: float = 0.0) -> steps.Moment:
    return steps.Moment(mono=100.0 + seconds, wall=1_000.0 + seconds)


def arrived(kind: CommandKind, job_id: str | None = "j1", start: StartJob | None = None,
            command_id: str | None = None, site: str = "a") -> steps.CommandArrived:  # fmt: skip
    if kind == "start_job" and start is None:
        start = START
    command = Command(id=command_id or f"{kind}-{job_id}", site=site, kind=kind, job_id=job_id,
                      issued_at=0.0, start=start)  # fmt: skip
    return steps.CommandArrived(f"entry-{command.id}", SIGNER.sign(command, at().wall), at())


def actions(effects: list[steps.Effect]) -> list[steps.Effect]:
    """The effects but the log notes."""
    return [e for e in effects if not isinstance(e, steps.Note)]


def agent(**file: object) -> AgentCore:
    return AgentCore("a", LIMITS, AgentFile.model_validate(file), CommandLedger(), VERIFIER)


def job(state: SiteJobState, **fields: object) -> LocalJob:
    return LocalJob.model_validate({"job_id": "j1", "state": state, "created_at": 1.0, **fields})


def running(**file: object) -> AgentCore:
    """An agent whose job j1 runs, as pid 42."""
    core = agent(**file)
    core.handle(arrived("start_job"))
    core.handle(steps.Launched("j1", 42))
    core.handle(steps.SiteLogged("j1", STARTED, at()))
    return core


# The site's own account of its data and model, as rank 0 logs it.
STARTED = TrainingStarted(
    time=1.0, step=0, total_steps=100, params=9, samples=100, class_counts=[60, 40],
    model_signature="sig", bsp_bytes_per_clock=99,
)  # fmt: skip


def last_applied(core: AgentCore) -> tuple[str, str]:
    applied = core.ledger.recent()[-1]
    return applied.outcome, applied.detail


# -- commands ----------------------------------------------------------------------------


def test_a_start_writes_the_job_launches_it_saves_then_acknowledges() -> None:
    core = agent()
    effects = actions(core.handle(arrived("start_job")))
    assert effects == [steps.WriteJobFiles("j1", START), steps.Launch("j1", resume=False),
                       steps.SaveState(), steps.SaveLedger(),
                       steps.Ack("entry-start_job-j1")]  # fmt: skip
    assert core.file.jobs["j1"].state == "starting"
    assert core.state == "running"
    assert last_applied(core) == ("applied", "started")
    core.handle(steps.Launched("j1", 42))
    assert core.file.jobs["j1"].pid == 42


@pytest.mark.parametrize(
    ("file", "command", "outcome", "detail"),
    [
        pytest.param({}, arrived("start_job", start=None, job_id=None), "refused",
                     "needs a job id and its start", id="start without a job"),
        pytest.param({"jobs": {"j1": job("finished")}}, arrived("start_job"), "ignored",
                     "job j1 is already finished here", id="start of a known job"),
        pytest.param({"removed": True, "draining": True}, arrived("start_job"), "refused",
                     "this site was removed", id="removed"),
        pytest.param({"jobs": {"j0": job("running", job_id="j0")}}, arrived("start_job"),
                     "refused", "busy with job j0", id="busy"),
        pytest.param({"jobs": {"j1": job("finished")}}, arrived("cancel_job"), "ignored",
                     "job j1 is already finished", id="cancel of a finished job"),
        pytest.param({}, arrived("drain", job_id=None) , "applied", "draining", id="drain"),
        pytest.param({"draining": True}, arrived("drain", job_id=None), "ignored",
                     "already draining", id="drain twice"),
        pytest.param({"removed": True}, arrived("remove", job_id=None), "ignored",
                     "already removed", id="remove twice"),
        pytest.param({}, arrived("activate", job_id=None), "ignored", "already active",
                     id="activate when active"),
    ],
)  # fmt: skip
def test_commands_that_start_nothing(
    file: dict[str, object], command: steps.CommandArrived, outcome: str, detail: str
) -> None:
    core = agent(**file)
    effects = actions(core.handle(command))
    assert not any(isinstance(e, steps.Launch | steps.Stop | steps.Kill) for e in effects)
    assert effects[-2:] == [steps.SaveLedger(), steps.Ack(command.entry_id)]
    applied, said = last_applied(core)
    assert applied == outcome
    assert detail in said


def test_a_start_while_draining_is_taken_but_not_launched() -> None:
    core = agent(draining=True)
    effects = actions(core.handle(arrived("start_job")))
    assert effects[:2] == [steps.WriteJobFiles("j1", START), steps.SaveState()]
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "drain")
    assert last_applied(core) == (
        "applied",
        "stopped: the site is draining; it starts when activated",
    )


def test_a_start_while_shutting_down_waits_for_the_agent_to_be_back() -> None:
    core = agent()
    core.handle(steps.SignalReceived("SIGTERM", at()))
    effects = actions(core.handle(arrived("start_job")))
    assert not any(isinstance(e, steps.Launch) for e in effects)
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "shutdown")
    assert core.done


def test_a_command_delivered_twice_is_applied_once_and_counted() -> None:
    core = agent()
    core.handle(arrived("start_job"))
    again = actions(core.handle(arrived("start_job")))
    assert again == [steps.SaveLedger(), steps.Ack("entry-start_job-j1")]
    assert core.ledger.duplicates == 1
    assert len(core.ledger.recent()) == 1


def test_a_command_for_another_site_or_unreadable_is_only_acknowledged() -> None:
    core = agent()
    assert core.handle(arrived("drain", site="b")) == [steps.Ack("entry-drain-j1")]
    assert core.handle(steps.CommandArrived("e9", None, at())) == [steps.Ack("e9")]
    assert not core.file.draining


def test_a_cancel_before_the_start_keeps_the_late_start_out() -> None:
    core = agent()
    core.handle(arrived("cancel_job"))
    assert last_applied(core) == ("applied", "cancelled before it started")
    effects = actions(core.handle(arrived("start_job")))
    assert not any(isinstance(e, steps.Launch) for e in effects)
    assert last_applied(core) == ("ignored", "job j1 is already cancelled here")


def test_a_cancel_of_a_running_job_stops_its_site_and_ends_cancelled() -> None:
    core = running()
    effects = actions(core.handle(arrived("cancel_job")))
    assert effects[:2] == [steps.Stop("j1"), steps.SaveState()]
    assert last_applied(core) == ("applied", "stopping at the next clock")
    core.handle(steps.SiteEnded("j1", 143, None))
    assert core.file.jobs["j1"].state == "cancelled"
    assert core.state == "idle"


def test_a_cancel_of_a_stopped_job_cancels_it_at_once() -> None:
    core = agent(draining=True, jobs={"j1": job("stopped", stop_reason="drain")})
    core.handle(arrived("cancel_job"))
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("cancelled", "cancel")


def test_a_drain_stops_every_site_but_keeps_a_cancel_a_cancel() -> None:
    core = running()
    core.handle(arrived("cancel_job"))
    effects = actions(core.handle(arrived("drain", job_id=None)))
    assert steps.Stop("j1") in effects
    assert core.file.jobs["j1"].stop_reason == "cancel"
    assert core.state == "draining"


def test_a_remove_stops_the_site_and_activate_resumes_its_job() -> None:
    core = running()
    core.handle(arrived("remove", job_id=None))
    assert core.state == "removed"
    core.handle(steps.SiteEnded("j1", 143, None))
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "remove")
    effects = actions(core.handle(arrived("activate", job_id=None)))
    assert effects[0] == steps.Launch("j1", resume=True)
    assert last_applied(core) == ("applied", "active; resumed j1")
    assert (core.file.jobs["j1"].restarts, core.file.jobs["j1"].failures) == (1, 0)


# -- what a site's exit means ------------------------------------------------------------


def test_a_site_that_trained_to_the_end_finishes_its_job() -> None:
    core = running()
    core.handle(steps.SiteLogged("j1", TrainingFinished(time=9.0, step=100, stopped=False,
                                                  test_accuracy=0.9), at()))  # fmt: skip
    assert actions(core.handle(steps.SiteEnded("j1", 0, None))) == [steps.SaveState()]
    assert core.file.jobs["j1"].state == "finished"
    assert core.file.jobs["j1"].pid is None
    assert core.state == "idle"


def test_a_crash_is_resumed_until_the_restart_budget_is_spent() -> None:
    core = running()
    for failures in (1, 2):
        effects = actions(core.handle(steps.SiteEnded("j1", 1, "boom")))
        assert effects == [steps.Launch("j1", resume=True), steps.SaveState()]
        assert core.file.jobs["j1"].failures == failures
        assert core.file.jobs["j1"].message == "exited with code 1: boom"
    core.handle(steps.SiteLogged("j1", TrainingFailed(time=5.0, message="rank 1 died"), at()))
    assert actions(core.handle(steps.SiteEnded("j1", 1, "boom"))) == [steps.SaveState()]
    failed = core.file.jobs["j1"]
    assert (failed.state, failed.restarts) == ("failed", 2)
    assert failed.message == "exited with code 1: rank 1 died (after 2 restart(s))"


def test_a_usage_error_fails_the_job_without_a_restart() -> None:
    core = running()
    core.handle(steps.SiteEnded("j1", 2, "atoll: error: no dataset digits"))
    assert core.file.jobs["j1"].state == "failed"
    assert core.file.jobs["j1"].restarts == 0


def test_a_shutdown_during_a_restart_stops_the_restarted_site_for_good() -> None:
    core = running()
    core.handle(steps.SiteEnded("j1", -9, None))  # crashed: restarted
    core.handle(steps.Launched("j1", 43))
    effects = actions(core.handle(steps.SignalReceived("SIGTERM", at())))
    assert effects == [steps.Stop("j1"), steps.SaveState()]
    assert actions(core.handle(steps.SiteEnded("j1", 143, None))) == [steps.SaveState()]
    stopped = core.file.jobs["j1"]
    assert (stopped.state, stopped.stop_reason) == ("stopped", "shutdown")
    assert core.done


def test_a_site_that_crashes_while_the_agent_shuts_down_is_stopped_not_restarted() -> None:
    core = running()
    core.handle(steps.SignalReceived("SIGTERM", at()))
    assert actions(core.handle(steps.SiteEnded("j1", 1, "boom"))) == [steps.SaveState()]
    assert core.file.jobs["j1"].state == "stopped"
    assert core.signal == "SIGTERM"


def test_drain_then_activate_while_stopping_starts_the_site_again_once_stopped() -> None:
    core = running()
    core.handle(arrived("drain", job_id=None))
    effects = actions(core.handle(arrived("activate", job_id=None)))
    assert not any(isinstance(e, steps.Launch) for e in effects)  # it has not stopped yet
    assert last_applied(core) == ("applied", "active; resumed j1 (once stopped)")
    effects = actions(core.handle(steps.SiteEnded("j1", 143, None)))
    assert effects == [steps.Launch("j1", resume=True), steps.SaveState()]
    assert (core.file.jobs["j1"].restarts, core.file.jobs["j1"].failures) == (1, 0)


def test_drain_activate_drain_while_stopping_leaves_it_stopped() -> None:
    core = running()
    core.handle(arrived("drain", job_id=None, command_id="d1"))
    core.handle(arrived("activate", job_id=None))
    core.handle(arrived("drain", job_id=None, command_id="d2"))
    assert actions(core.handle(steps.SiteEnded("j1", 143, None))) == [steps.SaveState()]
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "drain")


def test_an_activate_during_shutdown_resumes_at_the_next_start() -> None:
    core = running()
    core.handle(arrived("drain", job_id=None))
    core.handle(steps.SignalReceived("SIGTERM", at()))
    effects = actions(core.handle(arrived("activate", job_id=None)))
    assert not any(isinstance(e, steps.Launch) for e in effects)
    core.handle(steps.SiteEnded("j1", 143, None))
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "shutdown")
    assert core.done
    # The next agent resumes it.
    nxt = AgentCore("a", LIMITS, core.file, CommandLedger(), VERIFIER)
    effects = actions(nxt.handle(steps.Recover({}, at())))
    assert effects == [steps.Launch("j1", resume=True), steps.SaveState()]


# -- time and signals --------------------------------------------------------------------


def test_a_site_that_does_not_stop_in_time_is_killed_once() -> None:
    core = running()
    core.handle(arrived("drain", job_id=None))
    assert core.handle(steps.Tick(at(LIMITS.stop_timeout_s - 1))) == []
    assert actions(core.handle(steps.Tick(at(LIMITS.stop_timeout_s + 1)))) == [steps.Kill("j1")]
    assert core.handle(steps.Tick(at(LIMITS.stop_timeout_s + 2))) == []
    core.handle(steps.SiteEnded("j1", -9, None))
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "drain")


def test_a_second_ctrl_c_kills_the_sites() -> None:
    core = running()
    assert actions(core.handle(steps.SignalReceived("SIGINT", at()))) == [
        steps.Stop("j1"),
        steps.SaveState(),
    ]
    assert actions(core.handle(steps.SignalReceived("SIGINT", at(1)))) == [steps.Kill("j1")]
    core.handle(steps.SiteEnded("j1", -9, None))
    assert core.file.jobs["j1"].state == "stopped"
    assert core.done
    assert core.signal == "SIGINT"


def test_an_abort_kills_every_site_and_starts_none_again() -> None:
    core = running()
    assert actions(core.handle(steps.Abort(at()))) == [steps.Kill("j1"), steps.SaveState()]
    core.handle(steps.SiteEnded("j1", -9, None))
    assert (core.file.jobs["j1"].state, core.file.jobs["j1"].stop_reason) == ("stopped", "shutdown")
    assert core.done


# -- recovery after the agent restarted --------------------------------------------------

LOG: list[RunEvent] = [
    TrainingStarted(time=1.0, step=0, total_steps=100, params=9),
    StepDone(time=2.0, step=30, loss=1.0, epoch=0),
]


@pytest.mark.parametrize(
    ("file", "launched", "state", "stop_reason"),
    [
        pytest.param({"jobs": {"j1": job("running", pid=42)}}, True, "starting", None,
                     id="running when the agent died"),
        pytest.param({"jobs": {"j1": job("stopped", stop_reason="shutdown")}}, True, "starting",
                     None, id="stopped by the agent's shutdown"),
        pytest.param({"jobs": {"j1": job("stopped", stop_reason="drain")}, "draining": True},
                     False, "stopped", "drain", id="stopped by a drain"),
        pytest.param({"jobs": {"j1": job("running", stop_reason="cancel")}}, False, "cancelled",
                     "cancel", id="being cancelled"),
        pytest.param({"jobs": {"j1": job("running")}, "draining": True}, False, "stopped",
                     "drain", id="running on a draining site"),
        pytest.param({"jobs": {"j1": job("finished")}}, False, "finished", None, id="finished"),
    ],
)  # fmt: skip
def test_what_a_restarted_agent_resumes(
    file: dict[str, object], launched: bool, state: str, stop_reason: str | None
) -> None:
    core = agent(**file)
    effects = actions(core.handle(steps.Recover({"j1": LOG}, at())))
    assert (steps.Launch("j1", resume=True) in effects) is launched
    resumed = core.file.jobs["j1"]
    assert (resumed.state, resumed.stop_reason) == (state, stop_reason)
    assert resumed.pid is None  # its site is gone; a resume starts another
    assert resumed.restarts == (1 if launched else 0)
    assert core.job_reports()[0].clock == 30  # its progress, from its log


# -- what the site logs ------------------------------------------------------------------


def telemetry(effects: list[steps.Effect]) -> list[str]:
    return [e.sample.kind for e in effects if isinstance(e, steps.SendTelemetry)]


def test_the_first_started_event_makes_the_job_running() -> None:
    core = agent()
    core.handle(arrived("start_job"))
    started = TrainingStarted(time=1.0, step=0, total_steps=100, params=9)
    assert core.handle(steps.SiteLogged("j1", started, at())) == [steps.SaveState()]
    assert core.file.jobs["j1"].state == "running"


def test_the_site_reports_its_own_data_and_model() -> None:
    report = running().job_reports()[0]
    assert (report.samples, report.params, report.bsp_bytes_per_clock) == (100, 9, 99)


@pytest.mark.parametrize("has_data", [False, True])
def test_a_job_on_the_sites_own_data_needs_a_site_with_data(has_data: bool) -> None:
    limits = Limits(2, 10.0, 1.0, registry=False, has_data=has_data)
    core = AgentCore("a", limits, AgentFile(), CommandLedger(), VERIFIER)
    start = START.model_copy(update={"own_data": True})
    core.handle(arrived("start_job", start=start))
    applied = core.ledger.recent()[0]
    assert applied.outcome == ("applied" if has_data else "refused")
    if not has_data:
        assert "own data" in applied.detail and "j1" not in core.file.jobs


def test_step_samples_are_throttled_evaluations_and_the_end_are_not() -> None:
    core = running()
    sent = []
    for seconds, step in [(1.0, 1), (1.5, 2), (2.1, 3)]:
        logged = StepDone(time=seconds, step=step, loss=1.0, epoch=0)
        sent += telemetry(core.handle(steps.SiteLogged("j1", logged, at(seconds))))
    assert sent == ["step", "step"]  # 1.5 s came 0.5 s after the last sample
    evaluated = Evaluated(time=3.0, step=3, test_accuracy=0.5, test_loss=1.0)
    effects = core.handle(steps.SiteLogged("j1", evaluated, at(2.2)))
    assert telemetry(effects) == ["eval"]
    assert steps.ReportToRegistry([60.0, 40.0], 0.5, 100, "sig", "j1.3") in effects
    end = TrainingFinished(time=9.0, step=100, stopped=False, test_accuracy=0.9)
    effects = core.handle(steps.SiteLogged("j1", end, at(2.3)))
    assert telemetry(effects) == ["end"]
    assert steps.ReportToRegistry([60.0, 40.0], 0.9, 100, "sig", "j1.100") in effects


def test_without_a_registry_nothing_is_reported_to_one() -> None:
    core = AgentCore(
        "a", Limits(2, 10.0, 1.0, registry=False), AgentFile(), CommandLedger(), VERIFIER
    )
    core.handle(arrived("start_job"))
    evaluated = Evaluated(time=3.0, step=3, test_accuracy=0.5, test_loss=1.0)
    effects = core.handle(steps.SiteLogged("j1", evaluated, at()))
    assert telemetry(effects) == ["eval"]
    assert not any(isinstance(e, steps.ReportToRegistry) for e in effects)


def test_a_cartel_site_reports_to_the_registry_itself_not_through_its_agent() -> None:
    core = agent()
    cartel = START.model_copy(update={"kind": "cartel"})
    core.handle(arrived("start_job", start=cartel))
    assert core.file.jobs["j1"].kind == "cartel"
    evaluated = Evaluated(time=3.0, step=3, test_accuracy=0.5, test_loss=1.0)
    effects = core.handle(steps.SiteLogged("j1", evaluated, at()))
    assert telemetry(effects) == ["eval"]  # the control plane still follows it
    assert not any(isinstance(e, steps.ReportToRegistry) for e in effects)


def test_the_registry_id_it_learns_is_saved() -> None:
    core = agent()
    assert core.handle(steps.RegistryJoined("site-1")) == [steps.SaveState()]
    assert core.file.registry_id == "site-1"


def test_reports_list_open_jobs_and_the_last_twenty_closed_ones() -> None:
    jobs = {f"j{i}": job("finished", job_id=f"j{i}", created_at=float(i)) for i in range(30)}
    jobs["open"] = job("stopped", job_id="open", stop_reason="drain", created_at=0.5)
    reports = agent(jobs=jobs).job_reports()
    assert reports[0].job_id == "open"
    assert [r.job_id for r in reports[1:]] == [f"j{i}" for i in range(10, 30)]


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (lambda c: c.model_copy(update={"signature": None}), "not signed"),
        (lambda c: c.model_copy(update={"kind": "remove"}), "signature is not the control"),
        (
            lambda c: CommandSigner(Ed25519PrivateKey.generate()).sign(c, at().wall),
            "signature is not the control",
        ),
        (lambda c: SIGNER.sign(c, at().wall - 3600), "outside the 600 s window (a replay)"),
        (lambda c: c.model_copy(update={"signature": "%%%"}), "signature is not the control"),
    ],
)
def test_a_command_not_signed_by_the_control_plane_or_replayed_is_refused_and_named(
    tamper: object, why: str
) -> None:
    core = agent()
    good = arrived("start_job")
    assert good.command is not None
    bad = steps.CommandArrived(good.entry_id, tamper(good.command), at())  # type: ignore[operator]
    effects = core.handle(bad)
    assert effects[-1] == steps.Ack(good.entry_id)  # acknowledged: it is never applied
    notes = [e for e in effects if isinstance(e, steps.Note)]
    assert len(notes) == 1 and notes[0].level == "warning"
    assert "for site a" in notes[0].message and why in notes[0].message
    assert core.file.jobs == {}  # nothing started
    assert core.ledger.seen(good.command.id) is None  # and the real one still applies later
    assert any(isinstance(e, steps.WriteJobFiles) for e in core.handle(good))
