"""deploy/podman/healthchecks.py: when each container's healthcheck is due, what podman's
inspect says about it, and how a check's result reads. The runner itself drives every
healthcheck of tests/containers, against podman."""

from types import ModuleType

import pytest


def test_a_new_container_is_checked_at_once_then_every_interval(
    podman_healthchecks: ModuleType,
) -> None:
    schedule = podman_healthchecks.Schedule()
    schedule.track({"redis": 5.0, "edge": 15.0}, now=100.0)
    steps = [
        # (now, running, busy, due)
        (100.0, {"redis": 5.0, "edge": 15.0}, [], ["edge", "redis"]),
        (104.9, {"redis": 5.0, "edge": 15.0}, [], []),
        (105.0, {"redis": 5.0, "edge": 15.0}, [], ["redis"]),
        (110.0, {"redis": 5.0, "edge": 15.0}, ["redis"], []),  # its last check still runs
        (111.0, {"redis": 5.0, "edge": 15.0}, [], ["redis"]),  # overdue: at once, then +5 s
        (115.0, {"redis": 5.0, "edge": 15.0}, [], ["edge"]),
        (116.0, {"redis": 5.0, "edge": 15.0, "control": 10.0}, [], ["control", "redis"]),
        (117.0, {"control": 10.0}, [], []),  # the others stopped: forgotten
        (118.0, {"control": 10.0, "redis": 5.0}, [], ["redis"]),  # started again: new
    ]
    for now, running, busy, due in steps:
        schedule.track(running, now)
        assert schedule.take_due(now, busy=busy) == due, now
    assert set(schedule.due) == {"control", "redis"}


def test_an_interval_must_be_positive(podman_healthchecks: ModuleType) -> None:
    with pytest.raises(ValueError, match="redis: a healthcheck interval must be positive"):
        podman_healthchecks.Schedule().track({"redis": 0.0}, now=0.0)


def healthcheck(test: list[str], interval_ns: int | None = None) -> dict:
    """A container's healthcheck as `podman inspect` gives it (durations in nanoseconds)."""
    check: dict = {"Test": test}
    if interval_ns is not None:
        check["Interval"] = interval_ns
    return {"Config": {"Healthcheck": check}}


@pytest.mark.parametrize(
    ("inspected", "interval"),
    [
        (healthcheck(["CMD", "atoll-healthcheck"], 15_000_000_000), 15.0),
        (healthcheck(["CMD-SHELL", "pg_isready"], 500_000_000), 0.5),
        (healthcheck(["CMD-SHELL", "true"]), 30.0),  # no interval: podman's default
        (healthcheck(["NONE"]), None),  # turned off
        ({"Config": {"Healthcheck": None}}, None),
        ({"Config": {}}, None),
        ({}, None),
    ],
)
def test_interval_from_podman_inspect(
    podman_healthchecks: ModuleType, inspected: dict, interval: float | None
) -> None:
    assert podman_healthchecks.interval_s(inspected) == interval


@pytest.mark.parametrize(
    ("returncode", "output", "shown"),
    [
        (0, "", "check passed"),
        (1, "unhealthy\n", "check failed: unhealthy"),
        (125, "Error: exceeded timeout\n", "check failed: Error: exceeded timeout"),
        (1, "", "check failed: exit 1"),
    ],
)  # fmt: skip
def test_outcome(podman_healthchecks: ModuleType, returncode: int, output: str, shown: str) -> None:
    assert podman_healthchecks.outcome(returncode, output) == shown
