"""A site over two machines: two torchrun "nodes" on loopback, each starting one rank of
the site (`atoll site run` under torchrun, env:// rendezvous through c10d).

BSP holds across them (the model equals the single-host site's); killing one node's
ranks fails the other with a message naming the lost node and the checkpoint; started
again with --resume, both nodes go on from that checkpoint to the end."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from integration.site.jobs import SMALL_DIGITS_JOB

from atoll.platform.net.ports import free_loopback_port
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]
JOB = {**SMALL_DIGITS_JOB, "comm_timeout_s": 60}


def start_nodes(job_file: Path, out: Path, logs: Path, *more: str) -> list[subprocess.Popen]:
    """Two torchruns, one rank each, meeting at one c10d rendezvous on loopback."""
    endpoint = f"127.0.0.1:{free_loopback_port()}"
    nodes = []
    for node in range(2):
        argv = [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
            "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
            "--rdzv-id", f"site-{endpoint}", "--max-restarts", "0",
            "-m", "atoll.cli", "site", "run", "--job", str(job_file), "--out", str(out), *more,
        ]  # fmt: skip
        log = (logs / f"node-{node}.log").open("ab")
        nodes.append(subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True))
    return nodes


def wait_all(nodes: list[subprocess.Popen], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    codes = []
    for node in nodes:
        try:
            codes.append(node.wait(max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for n in nodes:
                os.killpg(n.pid, signal.SIGKILL)
            raise
    return codes


def ranks_of(torchrun: subprocess.Popen) -> dict[int, int]:
    """RANK -> pid of the ranks a torchrun started (its child processes)."""
    found = {}
    children = Path(f"/proc/{torchrun.pid}/task/{torchrun.pid}/children").read_text().split()
    for pid in map(int, children):
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        values = dict(e.split(b"=", 1) for e in env if b"=" in e)
        if b"RANK" in values:
            found[int(values[b"RANK"])] = pid
    return found


def test_bsp_holds_across_two_torchrun_nodes(tmp_path: Path) -> None:
    job = SiteJob(**JOB, steps=30)
    job_file = tmp_path / "job.json"
    job_file.write_text(job.model_dump_json())
    nodes = start_nodes(job_file, tmp_path / "two-nodes", tmp_path)
    assert wait_all(nodes, 600) == [0, 0], (tmp_path / "node-0.log").read_text()
    train_site(job, tmp_path / "one-host")
    two = torch.load(tmp_path / "two-nodes" / "model.pt", weights_only=True)
    one = torch.load(tmp_path / "one-host" / "model.pt", weights_only=True)
    for name, value in one.items():
        assert torch.allclose(two[name], value, atol=1e-6), name
    summary = json.loads((tmp_path / "two-nodes" / "summary.json").read_text())
    assert (summary["status"], summary["steps"]) == ("completed", 30)
    assert summary["exchange"] == "process group"


def test_a_killed_node_fails_the_site_naming_it_and_the_site_resumes(tmp_path: Path) -> None:
    job_file = tmp_path / "job.json"
    job_file.write_text(SiteJob(**JOB, steps=4000, checkpoint_every=25).model_dump_json())
    out = tmp_path / "run"
    nodes = start_nodes(job_file, out, tmp_path)
    latest = out / "checkpoints" / "latest.json"
    deadline = time.monotonic() + 300
    while not latest.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert latest.exists(), "no checkpoint within 300 s"
    victim = next(n for n in nodes if 1 in ranks_of(n))  # the node that runs rank 1
    os.kill(ranks_of(victim)[1], signal.SIGKILL)
    codes = wait_all(nodes, 300)
    assert all(code != 0 for code in codes)
    survivor = nodes.index(next(n for n in nodes if n is not victim))
    said = (tmp_path / f"node-{survivor}.log").read_text()
    line = next(x for x in said.splitlines() if "site stopped:" in x)
    assert "lost node" in line and "ranks 1)" in line, line
    step = json.loads(latest.read_text())["step"]
    assert f"last checkpoint: step {step}" in line or "last checkpoint: step" in line, line

    # Both nodes again, from the checkpoint, to the end (a shorter job: same invariants).
    resumed = SiteJob(**JOB, steps=step + 50, checkpoint_every=25)
    job_file.write_text(resumed.model_dump_json())
    nodes = start_nodes(job_file, out, tmp_path, "--resume")
    assert wait_all(nodes, 600) == [0, 0], (tmp_path / "node-0.log").read_text()[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["resumed_from_step"] >= step
    assert summary["steps"] == step + 50
