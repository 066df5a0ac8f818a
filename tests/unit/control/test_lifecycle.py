from atoll.platform.control.lifecycle import SiteView, next_job_state, sites_to_close
from atoll.platform.control.states import SiteState


def views(**states: str | tuple[str, bool | None]) -> dict[str, SiteView]:
    out = {}
    for name, value in states.items():
        state, online = value if isinstance(value, tuple) else (value, True)
        out[name] = SiteView(SiteState(state), online)
    return out


def test_a_job_runs_while_any_live_site_runs() -> None:
    assert next_job_state("running", views(a="running", b="finished")) == ("running", None)
    assert next_job_state("running", views(a="assigned", b="starting")) == ("running", None)


def test_every_site_finished_completes_the_job() -> None:
    assert next_job_state("running", views(a="finished", b="finished")) == ("completed", None)


def test_an_offline_running_site_does_not_hold_the_end_once_the_others_are_done() -> None:
    state, message = next_job_state("running", views(a="finished", b=("running", False)))
    assert state == "completed"
    assert "without b" in message


def test_unknown_liveness_counts_as_online() -> None:
    assert next_job_state("running", views(a="finished", b=("running", None)))[0] == "running"


def test_a_job_whose_sites_are_all_offline_waits_for_them() -> None:
    state, message = next_job_state("running", views(a=("running", False), b=("starting", False)))
    assert state == "running"
    assert "waiting for a, b" in message


def test_a_failed_site_fails_the_job_once_nothing_runs_with_the_reason() -> None:
    sites = {"a": SiteView("failed", True, "exited with code 1"), "b": SiteView("finished", True)}
    state, message = next_job_state("running", sites)
    assert state == "failed"
    assert "a: exited with code 1" in message
    sites["b"] = SiteView("running", True)
    assert next_job_state("running", sites)[0] == "running"


def test_all_stopped_pauses_and_resuming_runs_again() -> None:
    assert next_job_state("running", views(a="stopped", b="stopped"))[0] == "paused"
    assert next_job_state("paused", views(a="running", b="stopped"))[0] == "running"


def test_terminal_and_pending_jobs_do_not_move() -> None:
    for state in ("completed", "failed", "cancelled", "pending"):
        assert next_job_state(state, views(a="running"))[0] == state


def test_closing_a_job_reaches_every_site_that_may_still_run_or_resume() -> None:
    sites = views(a="finished", b="running", c="stopped", d="failed", e="assigned")
    assert sites_to_close(sites) == ["b", "c", "e"]


def test_a_site_whose_clock_stopped_moving_does_not_hold_the_end_of_a_finished_job() -> None:
    sites = {"a": SiteView("finished", True), "b": SiteView("starting", True, stalled=True)}
    state, message = next_job_state("running", sites)
    assert state == "completed"
    assert "without b" in message
    # While nothing has finished, a stalled site is waited for.
    sites["a"] = SiteView("running", True, stalled=True)
    assert next_job_state("running", sites)[0] == "running"
