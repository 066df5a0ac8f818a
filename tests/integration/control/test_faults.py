"""Faults against the whole deployment, as processes: Redis (our own, so that it can be
restarted), the registry, the control plane (on PostgreSQL under CI) and three edge agents
with emulated WAN links between them. Each test runs a real geo job to its end."""

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from integration.control.harness import (
    DIGITS_JOB,
    SITES,
    job_end,
    log_events,
    site_clock,
    three_sites,
    wait_for,
    wait_for_clock,
)
from support import process_exists

from atoll.localstack.deployment import LocalDeployment
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.control.client import ControlClient
from atoll.platform.control.schemas import CommandOut, JobOut
from atoll.platform.core.events import GeoJoined, StepDone, TrainingStarted

# Alone: it times how soon the control plane sees a killed agent, which two cores shared
# with another worker's training did not always give within 20 s (seconds when alone).
pytestmark = [pytest.mark.integration, pytest.mark.alone]
JOB_S = 240  # the longest a job may take here, faults included
# The fault-tolerance under test is that a site rejoins and takes up the shared model, so
# the data is split IID: with a skewed split, a site away for half the job leaves its own
# classes under-learnt, which would be a property of the split rather than of the rejoin.
# Every update crosses the WAN (threshold 0), which makes runs from one seed agree to a few
# test images; a silent mirror stops holding the others back after 3 s (the default suits
# real WANs). The job is long enough (about 40 s here) that the others are still training
# when frankfurt's agent, site and ranks are back: its restart took 10 s at load 3, and a
# site that comes back after the others finished has nothing left to rejoin.
JOB = {
    **DIGITS_JOB,
    "clocks": 1000,
    "eval_every": 100,
    "partition": "iid",
    "geo": {"policy": "asp", "threshold": 0.0, "lease_s": 3.0},
}
results: dict[str, float] = {}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    with three_sites(tmp_path_factory.mktemp("deployment"), LocalDeployment) as stack:
        yield stack.start()


@pytest.fixture
def client(deployment: LocalDeployment) -> Iterator[ControlClient]:
    with ControlClient(deployment.control_url, deployment.admin_token, retries=10) as control:
        yield control


def run_log(deployment: LocalDeployment, site: str, job_id: str) -> Path:
    return deployment.root / "edge" / site / "state" / "jobs" / job_id / "run" / "log.jsonl"


def final_accuracy(job: JobOut) -> float:
    finals = {s.final_accuracy for s in job.sites}
    assert len(finals) == 1, f"the closing round leaves every replica the same: {finals}"
    return finals.pop()


def test_an_undisturbed_job_runs_everywhere_and_a_duplicate_start_is_ignored(
    deployment: LocalDeployment, client: ControlClient
) -> None:
    job = client.submit(JOB, name="undisturbed")
    wait_for("the job to run", lambda: site_clock(client, job.id, "virginia") > 0, JOB_S)
    # The bus delivers the start command to virginia once more, as it may after a retry.
    bus = Bus(deployment.bus_url, BusKeys(deployment.redis_prefix))
    try:
        stream = bus.keys.commands("virginia")
        start = next(f for _, f in bus.redis.xrange(stream) if '"start_job"' in f["m"])
        bus.redis.xadd(stream, start)
    finally:
        bus.close()
    done = job_end(client, job.id, JOB_S)
    assert done.state == "completed", done.message
    assert client.site("virginia").duplicates == 1
    starts = log_events(run_log(deployment, "virginia", job.id), TrainingStarted)
    assert len(starts) == 1  # applied once: one site process, started once
    for site in done.sites:
        assert site.clock == JOB["clocks"], site
        assert site.restarts == 0, site
    assert done.wan_bytes > 0
    assert done.bsp_wan_bytes
    assert done.params
    results["undisturbed"] = final_accuracy(done)


def test_faults_mid_job_an_agent_killed_redis_and_the_control_plane_restarted(
    deployment: LocalDeployment, client: ControlClient
) -> None:
    """One job takes every fault in turn (each one checked), so that one undisturbed run is
    enough to compare with: kill -9 of an agent, which rejoins; a Redis restart while it is
    away; a control-plane restart. Neither Redis nor the control plane carries training."""
    job = client.submit(JOB, name="faults")
    # kill -9 of frankfurt's agent, past its first checkpoint (clock 50).
    wait_for_clock(client, job.id, "frankfurt", 55, JOB_S)
    agent_file = deployment.root / "edge" / "frankfurt" / "state" / "agent.json"
    site_pid = json.loads(agent_file.read_text())["jobs"][job.id]["pid"]
    deployment.agents["frankfurt"].kill()
    killed_at, killed_wall = time.monotonic(), time.time()
    wait_for("frankfurt offline", lambda: not client.site("frankfurt").online, 20, poll_s=0.05)
    # Silent for two heartbeats is offline (the control plane looks every quarter second):
    # seconds, not the 30 s after which a site stops holding up its job. The margin is for a
    # loaded CI host, where each of the control plane's turns and answers can take seconds
    # (1.5 s is usual; 7.2 s was seen there, and over 10 s on a machine half as fast).
    assert time.monotonic() - killed_at <= 2 * deployment.heartbeat_s + 19
    wait_for("its site to die with it", lambda: not process_exists(site_pid), 10)
    deployment.start_agent("frankfurt")  # at once: its site takes a while to load

    # Redis restarts meanwhile and comes back empty: no streams, groups or keys.
    assert deployment.redis is not None
    deployment.redis.restart(down_s=1.0)
    wait_for("every site online again", lambda: all(s.online for s in client.job(job.id).sites), 30)

    # The control plane is killed and started again: the job's record is intact.
    before = client.job(job.id)
    assert before.state == "running"
    assert deployment.control is not None
    deployment.control.signal(signal.SIGKILL)
    deployment.control.kill_group()
    deployment.start_control()
    after = client.job(job.id)
    assert (after.id, after.state, after.spec, after.submitted_at) == (
        before.id, before.state, before.spec, before.submitted_at,
    )  # fmt: skip
    assert [s.site for s in after.sites] == [s.site for s in before.sites]
    assert all(a.clock >= b.clock for a, b in zip(after.sites, before.sites, strict=True))

    done = job_end(client, job.id, JOB_S)
    assert done.state == "completed", done.message
    for site in done.sites:
        assert site.clock == JOB["clocks"], (site, done.message)
        assert site.final_accuracy, (site, done.message)
    frankfurt = next(s for s in done.sites if s.site == "frankfurt")
    assert frankfurt.restarts == 1
    joined = log_events(run_log(deployment, "frankfurt", job.id), GeoJoined)[-1]
    assert joined.clock > 55  # it took up a mirror's replica, not its older checkpoint
    for site in ("virginia", "singapore"):  # meanwhile the others trained on
        steps = log_events(run_log(deployment, site, job.id), StepDone)
        away = [e for e in steps if killed_wall < e.time < joined.time]
        assert len(away) >= 15, f"{site} made {len(away)} clocks while frankfurt was away"
    history = client.telemetry(job.id, limit=5000).samples
    assert {s.site for s in history} == set(SITES)
    undisturbed = results.get("undisturbed")
    if undisturbed is None:
        pytest.skip("needs the undisturbed run of this module to compare with")
    # Within 2 points (7 of the 360 test images): the faults cost frankfurt some clocks,
    # which a 1,000-clock job does not make up exactly; a lost replica would cost far more.
    assert abs(final_accuracy(done) - undisturbed) <= 0.02


def test_commands_lost_with_redis_are_issued_again_from_sql(
    deployment: LocalDeployment, client: ControlClient
) -> None:
    agent = deployment.agents["singapore"]
    agent.stop()  # away: its drain command waits in Redis, which then forgets it
    client.drain("singapore")

    def drain() -> CommandOut | None:
        return next((c for c in client.commands("singapore").commands if c.kind == "drain"), None)

    wait_for("the drain to be published", lambda: (c := drain()) and c.publish_count == 1, 10)
    assert deployment.redis is not None
    deployment.redis.restart()
    wait_for("the drain to be published again", lambda: drain().publish_count >= 2, 20)
    deployment.start_agent("singapore")
    wait_for("the drain to be applied", lambda: drain().state == "applied", 60)
    assert client.site("singapore").agent_state == "draining"
    client.activate("singapore")
    wait_for("singapore active", lambda: client.site("singapore").agent_state == "idle", 30)
