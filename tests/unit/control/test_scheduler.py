from atoll.platform.control.scheduler import PendingJob, SiteSlot, schedule

READY = SiteSlot("active", True, None, 4)


def test_a_job_starts_when_every_site_is_online_active_and_free() -> None:
    plan = schedule([PendingJob("j1", ("a", "b"), 1)], {"a": READY, "b": READY})
    assert plan.start == ["j1"]
    assert plan.waiting == {}


def test_a_job_waits_and_says_for_what() -> None:
    sites = {
        "a": SiteSlot("draining", True, None, 4),
        "b": SiteSlot("active", False, None, 4),
        "c": SiteSlot("active", True, "other", 4),
        "d": SiteSlot("active", True, None, 1),
    }
    plan = schedule([PendingJob("j1", ("a", "b", "c", "d", "e"), 2)], sites)
    reason = plan.waiting["j1"]
    assert plan.start == []
    assert "a (draining)" in reason
    assert "b (offline)" in reason
    assert "c (running job other)" in reason
    assert "d (listens on 1 port(s)" in reason
    assert "e (no agent has joined as e)" in reason


def test_jobs_start_in_submission_order_and_a_waiting_job_keeps_its_sites() -> None:
    sites = {"a": READY, "b": SiteSlot("active", False, None, 4), "c": READY}
    jobs = [PendingJob("first", ("a", "b"), 1), PendingJob("second", ("a", "c"), 1)]
    plan = schedule(jobs, sites)
    assert plan.start == []
    assert "a (held for job first" in plan.waiting["second"]
    # Disjoint sites: the later job goes ahead.
    plan = schedule([PendingJob("first", ("a", "b"), 1), PendingJob("x", ("c",), 1)], sites)
    assert plan.start == ["x"]


def test_two_ready_jobs_on_the_same_sites_start_one_at_a_time() -> None:
    jobs = [PendingJob("j1", ("a",), 1), PendingJob("j2", ("a",), 1)]
    plan = schedule(jobs, {"a": READY})
    assert plan.start == ["j1"]
    assert "held for job j1" in plan.waiting["j2"]


def test_a_site_busy_with_the_job_itself_is_no_obstacle() -> None:
    plan = schedule([PendingJob("j1", ("a",), 1)], {"a": SiteSlot("active", True, "j1", 1)})
    assert plan.start == ["j1"]
