"""What the cartel integration tests share: a stack of real agents, and where a site's run is."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from integration.control.harness import shared_redis_url

from atoll.localstack.deployment import AgentSpec, LocalDeployment


@contextmanager
def cartel_stack(root: Path, agents: list[AgentSpec]) -> Iterator[LocalDeployment]:
    # A site killed mid-job restarts from its checkpoint; on a loaded CI host starting its
    # process (Python, torch) took 30 s, as long as the control plane's default wait before
    # it ends a job without a site whose clock stands still. These jobs last 15-40 s.
    deployment = LocalDeployment(
        root / "stack",
        agents,
        redis_url=shared_redis_url(),
        heartbeat_s=0.5,
        with_web=False,
        control_env={"ATOLL_LOST_AFTER_S": "120"},
    )
    with deployment:
        yield deployment


def run_dir(stack: LocalDeployment, site: str, job_id: str) -> Path:
    return stack.root / "edge" / site / "state" / "jobs" / job_id / "run"
