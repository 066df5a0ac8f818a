"""The edge agent as a real process (`python -m atoll.edge run`, i.e. `atoll edge run`), its
site as a real `atoll site run`, and a real Redis; the control plane is played by writing
commands to the bus directly and reading what the agent reports."""

import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import yaml
from integration.control.harness import (
    enrol_offline,
    log_events,
    own_redis,
    wait_for,
)

from atoll.localstack.deployment import Managed
from atoll.localstack.registry import ServerProcess, scratch_database
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import AgentStatus, Command, JobReport, StartJob
from atoll.platform.control.authority import Authority
from atoll.platform.core.events import (
    CheckpointSaved,
    StepDone,
    TrainingFinished,
    TrainingStarted,
)
from atoll.platform.net.ports import free_loopback_port
from atoll.platform.site.spec import SiteJob
from atoll.registry.client import RegistryClient

pytestmark = pytest.mark.integration
HEARTBEAT_S = 0.5


class Agent:
    """One agent process for site `a` and what it says on the bus."""

    def __init__(self, root: Path, bus: Bus, **extra: Any) -> None:
        self.root, self.bus = root, bus
        root.mkdir(parents=True, exist_ok=True)
        self.config = root / "site.yaml"
        settings = {
            "name": "a",
            "region": "test",
            "geo": {"host": "127.0.0.1", "port": free_loopback_port(), "ports": 1},
            "state_dir": str(root / "state"),
            "heartbeat_s": HEARTBEAT_S,
            "telemetry_interval_s": 0.2,
            "threads": 1,
            **extra,
        }
        self.config.write_text(yaml.safe_dump(settings))
        enrol_offline(root / "ca", root / "state", "a")
        self.signer = Authority(root / "ca").signer  # the control plane's, played here
        self.process: Managed | None = None

    def send(self, command: Command) -> None:
        """Put a command on the site's stream, signed as the control plane signs it."""
        self.bus.publish_command(self.signer.sign(command, time.time()))

    def start(self, env: dict[str, str] | None = None) -> Managed:
        argv = [sys.executable, "-m", "atoll.edge", "run", "--config", str(self.config)]
        base = {"ATOLL_REDIS_URL": self.bus.url, "ATOLL_REDIS_PREFIX": self.bus.keys.prefix}
        self.process = Managed("agent a", argv, {**base, **(env or {})}, self.root / "agent.log")
        return self.process.start()

    def status(self) -> AgentStatus | None:
        for _, fields in self.bus.redis.xrevrange(self.bus.keys.status("a"), count=200):
            status = AgentStatus.decode(fields)
            if status.site == "a":
                return status
        return None

    def job(self, job_id: str) -> JobReport | None:
        status = self.status()
        return next((j for j in status.jobs if j.job_id == job_id), None) if status else None

    def wait_job(self, job_id: str, what: str, check: Any, timeout_s: float = 120) -> JobReport:
        def matching() -> JobReport | None:
            job = self.job(job_id)
            return job if job is not None and check(job) else None

        return wait_for(f"job {job_id} {what}: {self.tail()}", matching, timeout_s)

    def run_log(self, job_id: str) -> Path:
        return self.root / "state" / "jobs" / job_id / "run" / "log.jsonl"

    def tail(self) -> str:
        return self.process.tail(600) if self.process else ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(60)


def start_command(steps: int, checkpoint_every: int = 10) -> Command:
    job_id = str(uuid4())
    site_job = SiteJob(
        dataset="digits",
        model="mlp",
        batch_size=16,
        steps=steps,
        eval_every=10,
        eval_samples=100,
        checkpoint_every=checkpoint_every,
        threads=1,
    )
    start = StartJob(
        job_name="t",
        site_job=site_job.model_dump(mode="json"),
        clocks=steps,
    )
    return Command(
        id=str(uuid4()), site="a", kind="start_job", job_id=job_id, issued_at=0.0, start=start
    )


def command(kind: str, job_id: str | None = None) -> Command:
    return Command(id=str(uuid4()), site="a", kind=kind, job_id=job_id, issued_at=time.time())  # type: ignore[arg-type]


@pytest.fixture
def agent(tmp_path: Path, bus: Bus) -> Iterator[Agent]:
    agent = Agent(tmp_path / "agent", bus)
    try:
        yield agent
    finally:
        agent.stop()


def test_sigterm_checkpoints_drains_and_the_next_agent_resumes_the_job(
    agent: Agent, bus: Bus
) -> None:
    process = agent.start()
    start = start_command(steps=100_000)
    agent.send(start)
    agent.wait_job(start.job_id, "runs", lambda j: j.state == "running" and j.clock >= 5)
    process.signal(signal.SIGTERM)
    assert process.process.wait(60) == 143
    status = agent.status()
    assert status.state == "draining"  # what it said on its way out
    stopped = next(j for j in status.jobs if j.job_id == start.job_id)
    assert (stopped.state, stopped.stop_reason) == ("stopped", "shutdown")
    finished = log_events(agent.run_log(start.job_id), TrainingFinished)
    assert finished[-1].stopped  # the site finished its clock and stopped
    checkpoint = log_events(agent.run_log(start.job_id), CheckpointSaved)[-1].step
    assert checkpoint == finished[-1].step

    agent.start()  # the same site comes back: it resumes from that checkpoint
    resumed = agent.wait_job(start.job_id, "resumes", lambda j: j.state == "running")
    assert resumed.restarts == 1
    starts = log_events(agent.run_log(start.job_id), TrainingStarted)
    assert [e.step for e in starts] == [0, checkpoint]

    agent.send(command("drain"))
    agent.wait_job(
        start.job_id,
        "stops for the drain",
        lambda j: (j.state, j.stop_reason) == ("stopped", "drain"),
    )
    wait_for("the agent to say it drains", lambda: agent.status().state == "draining", 20)
    agent.send(command("activate"))
    agent.wait_job(start.job_id, "resumes", lambda j: j.state == "running" and j.restarts == 2)
    agent.send(command("cancel_job", start.job_id))
    agent.wait_job(start.job_id, "is cancelled", lambda j: j.state == "cancelled")
    assert agent.status().state == "idle"


def test_training_goes_on_while_redis_and_the_registry_are_away(tmp_path: Path) -> None:
    registry_port = free_loopback_port()
    with own_redis(tmp_path / "redis") as redis:
        bus = Bus(redis.url, BusKeys(f"atoll-test-{uuid4().hex[:8]}"))
        agent = Agent(tmp_path / "agent", bus, registry_heartbeat_s=1.0)
        admin = "test-admin-" + uuid4().hex
        agent.start(
            {"ATOLL_REGISTRY_URL": f"http://127.0.0.1:{registry_port}", "ATOLL_ADMIN_TOKEN": admin}
        )
        try:
            start = start_command(steps=300, checkpoint_every=50)
            agent.send(start)
            agent.wait_job(start.job_id, "runs", lambda j: j.state == "running")
            redis.restart(down_s=3.0)  # Redis away for a while, then back with nothing
            steps = [e.step for e in log_events(agent.run_log(start.job_id), StepDone)]
            assert steps, "the site logged no clock"
            assert steps[-1] > 1  # the site trained on meanwhile
            # Back: the agent reports again (a new Redis, so a new stream) and goes on.
            agent.wait_job(start.job_id, "finishes", lambda j: j.state == "finished", 180)
            assert agent.job(start.job_id).restarts == 0

            # The registry was never there: it comes up now, and the agent catches up, with
            # the reports of the evaluations it made meanwhile.
            with scratch_database(tmp_path) as url:
                registry = ServerProcess(url, admin, tmp_path / "registry.log")
                registry.port, registry.url = registry_port, f"http://127.0.0.1:{registry_port}"
                with registry, RegistryClient(registry.url, admin) as client:
                    site_id = wait_for("the registration", lambda: agent.status().registry_id, 60)
                    final = f"{start.job_id}.300"

                    def caught_up() -> list:
                        found = client.reports(site_id).reports
                        return found if found and found[0].model_version == final else []

                    reports = wait_for("the reports to catch up", caught_up, 60)
                    assert reports[0].accuracy == agent.job(start.job_id).final_accuracy
                    assert len(reports) >= 2
                    assert reports[0].samples == 1437
        finally:
            agent.stop()
            bus.close()
