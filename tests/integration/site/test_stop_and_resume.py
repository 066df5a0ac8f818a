"""A site stopped by SIGTERM or by the death of a rank resumes from its last
checkpoint and ends with exactly the parameters of an uninterrupted run."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from support import process_exists, start_train

from atoll.platform.core.events import RankStarted, RunEvent, StepDone, of_kind
from atoll.platform.core.runlog import read_events

pytestmark = pytest.mark.integration
STEPS = 500
ARGS = [
    "--dataset", "digits", "--model", "cnn", "--workers", "2", "--shards", "2",
    "--batch-size", "16", "--steps", str(STEPS), "--threads", "1", "--checkpoint-every", "25",
    "--eval-every", "1000",
]  # fmt: skip


def start(out: Path, *extra: str) -> subprocess.Popen[str]:
    return start_train(out, *ARGS, *extra)


def finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    _, stderr = process.communicate(timeout=timeout)
    return process.returncode, stderr


def events(out: Path) -> list[RunEvent]:
    return read_events(out / "log.jsonl")


def wait_for_step(out: Path, step: int, timeout: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = events(out)
        if any(e.step >= step for e in of_kind(seen, StepDone)):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"no step {step} within {timeout} s")


def weights(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "model.pt", weights_only=True)


@pytest.fixture(scope="module")
def uninterrupted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    code, stderr = finish(start(out))
    assert code == 0, stderr
    return out


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_run: Path) -> dict[str, torch.Tensor]:
    return weights(uninterrupted_run)


@pytest.fixture
def finished_run(tmp_path: Path, uninterrupted_run: Path) -> Path:
    """A copy of a completed run folder, to be refused by the next command."""
    out = tmp_path / "run"
    shutil.copytree(uninterrupted_run, out)
    return out


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed parameters differ"


def test_sigterm_checkpoints_at_the_clock_boundary_and_resume_matches(
    tmp_path: Path, uninterrupted: dict[str, torch.Tensor]
) -> None:
    out = tmp_path / "run"
    process = start(out)
    wait_for_step(out, 60)
    process.send_signal(signal.SIGTERM)
    code, stderr = finish(process)
    assert code == 143, stderr
    assert "stopped by SIGTERM" in stderr
    assert "--resume" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped"
    assert 60 <= summary["steps"] < STEPS
    manifest = json.loads((out / "checkpoints" / "latest.json").read_text())
    assert manifest["step"] == summary["steps"]  # checkpointed where it stopped

    code, stderr = finish(start(out, "--resume"))
    assert code == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["steps"] == STEPS
    assert summary["resumed_from_step"] == manifest["step"]
    assert_same(weights(out), uninterrupted)


def test_killed_worker_is_named_and_the_site_resumes_from_its_checkpoint(
    tmp_path: Path, uninterrupted: dict[str, torch.Tensor]
) -> None:
    out = tmp_path / "run"
    process = start(out)
    seen = wait_for_step(out, 80)
    pid = next(e.pid for e in of_kind(seen, RankStarted) if e.rank == 1)
    os.kill(pid, signal.SIGKILL)
    code, stderr = finish(process, timeout=60)  # never hangs
    assert code == 2
    assert "rank 1 (worker 1, shard 1) was killed by SIGKILL" in stderr
    assert "last checkpoint: step" in stderr
    assert "--resume" in stderr
    assert "Traceback" not in stderr

    code, stderr = finish(start(out, "--resume"))
    assert code == 0, stderr
    assert_same(weights(out), uninterrupted)


def test_a_hung_worker_fails_the_site_within_the_timeout(tmp_path: Path) -> None:
    out = tmp_path / "run"
    process = start(out, "--comm-timeout", "3")
    seen = wait_for_step(out, 30)
    pid = next(e.pid for e in of_kind(seen, RankStarted) if e.rank == 1)
    os.kill(pid, signal.SIGSTOP)
    try:
        code, stderr = finish(process, timeout=60)
    finally:
        if process_exists(pid):
            os.kill(pid, signal.SIGKILL)  # a stopped process ignores everything else
    assert code == 2
    assert "PeerLost" in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert any(
        clue in stderr for clue in ("exchanged no gradients", "no parameters", "stopped answering")
    ), stderr


def test_resume_refuses_a_different_job(finished_run: Path) -> None:
    before = weights(finished_run)
    code, stderr = finish(start(finished_run, "--resume", "--batch-size", "8"))
    assert code == 2
    assert "cannot resume" in stderr
    assert "batch_size" in stderr
    assert_same(weights(finished_run), before)


def test_an_existing_run_is_not_overwritten_by_accident(finished_run: Path) -> None:
    before = (finished_run / "summary.json").read_text()
    code, stderr = finish(start(finished_run))
    assert code == 2
    assert "already holds a run" in stderr
    assert (finished_run / "summary.json").read_text() == before
