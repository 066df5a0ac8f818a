"""`atoll demo` as a newcomer runs it: everything starts, one job completes, the table and
the record come out, the dashboard it prints lets its token in (`--keep`), and no process
outlives the command, after the job or after a Ctrl-C."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration


def demo(out: Path, log: Path, *args: str, sigint_ignored: bool = False) -> subprocess.Popen[str]:
    """`sigint_ignored`: started as a non-interactive shell's background job is, with
    SIGINT ignored (a shell's `trap "" INT`, which `exec` passes on)."""
    command = [sys.executable, "-m", "atoll.cli", "demo", "--out", str(out), *args]
    if sigint_ignored:
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    with log.open("w") as stderr:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line or environment holds `text` (our run folder):
    every process the demo starts names it, through a path or a database URL."""
    found = []
    for folder in Path("/proc").iterdir():
        if not folder.name.isdigit() or int(folder.name) == os.getpid():
            continue
        try:
            cmdline = (folder / "cmdline").read_bytes()
            environ = (folder / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if text.encode() in cmdline or text.encode() in environ:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{folder.name}: {command}")
    return found


def wait_gone(text: str, timeout_s: float = 10) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (left := processes_mentioning(text)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def wait_for(log: Path, text: str, process: subprocess.Popen[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text():
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"the demo never said {text!r}"
        time.sleep(0.2)


def dashboard_lists_the_sites(stdout_head: str) -> None:
    """Log in to the printed dashboard with the printed token, as a person would."""
    printed = dict(re.findall(r"^(dashboard|admin token): (\S+)$", stdout_head, re.MULTILINE))
    url, token = printed["dashboard"], printed["admin token"]
    with httpx.Client(base_url=url, timeout=10) as browser:
        login = browser.post("/login", data={"token": token}, headers={"Origin": url})
        assert login.status_code == 303, login.text[:500]
        sites = browser.get("/sites")
        assert sites.status_code == 200 and "virginia" in sites.text


def test_the_demo_completes_a_job_keeps_the_stack_then_stops_it_all(
    tmp_path: Path, fashion_mnist: Path
) -> None:
    """`--keep`: after the job, everything runs (log in to the dashboard) until Ctrl-C."""
    out = tmp_path / "demo"
    log = tmp_path / "stderr.log"
    process = demo(out, log, "--clocks", "30", "--keep")
    try:
        wait_for(log, "everything keeps running", process, 300)
        assert process.stdout is not None
        head = process.stdout.readline() + process.stdout.readline()
        dashboard_lists_the_sites(head)
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
        rest = process.stdout.read()  # not communicate(): it would skip what readline buffered
    finally:
        if process.poll() is None:
            process.kill()
    stdout = head + rest
    stderr = log.read_text()
    assert process.returncode == 0, stderr[-3000:]
    assert "control plane: http://127.0.0.1:" in stderr
    # The dashboard's address and a login for it come first, each on a line of its own.
    first, second = stdout.splitlines()[:2]
    assert first.startswith("dashboard: http://127.0.0.1:"), stdout[:300]
    assert second.startswith("admin token: local-admin-"), stdout[:300]
    for site in ("virginia", "frankfurt", "singapore"):
        assert site in stdout
    assert "of what BSP would send" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["state"] == "completed"
    assert [s["clock"] for s in summary["sites"]] == [30, 30, 30]
    final = {s["site"]: s["final_accuracy"] for s in summary["sites"]}
    # The closing round averages the replicas: every site ends with the same model.
    assert len(set(final.values())) == 1, final
    # Ten classes: chance is 0.1; 30 clocks reached 0.58 here.
    assert min(final.values()) > 0.3, final
    assert summary["wan_bytes"] > 0
    assert summary["wan_bytes"] < summary["bsp_wan_bytes"]
    assert all(Path(p).stat().st_size > 10_000 for p in summary["plots"])
    assert wait_gone(str(out)) == []


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["terminal", "sigint-ignored"])
def test_ctrl_c_stops_every_process_the_demo_started(
    tmp_path: Path, fashion_mnist: Path, sigint_ignored: bool
) -> None:
    out = tmp_path / "demo"
    log = tmp_path / "stderr.log"
    process = demo(out, log, "--clocks", "100000", sigint_ignored=sigint_ignored)
    try:
        wait_for(log, "control plane: http", process, 180)
        assert processes_mentioning(str(out))  # the services and agents are running
        time.sleep(3)  # the job is under way
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, log.read_text()[-3000:]
    assert "stopping every process the demo started" in log.read_text()
    assert wait_gone(str(out)) == []
