"""The real geo runtime: site processes on loopback, joined by shaped, authenticated links."""

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from support import start_train

from atoll.platform.core.events import (
    EventModel,
    GeoJoined,
    GeoStats,
    SiteDied,
    SiteLaunched,
    StepDone,
    of_kind,
)
from atoll.platform.core.runlog import read_events

E = TypeVar("E", bound=EventModel)
pytestmark = pytest.mark.integration
BASE = [
    "--sites", "3", "--topology", "three-continents", "--dataset", "digits", "--batch-size", "16",
    "--eval-every", "10", "--eval-samples", "200", "--target-accuracy", "0.5",
]  # fmt: skip


def start(out: Path, *extra: str) -> subprocess.Popen[str]:
    return start_train(out, *BASE, *extra)


def events(path: Path, kind: type[E]) -> list[E]:
    return of_kind(read_events(path), kind)


def site_step(out: Path, site: str) -> int:
    steps = [e.step for e in events(out / "sites" / site / "log.jsonl", StepDone)]
    return max(steps, default=0)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_asp_job_runs_end_to_end_and_replicas_agree(tmp_path: Path) -> None:
    # three-continents' sites 400 ms apart: at the default DS=3 a site may run three clocks
    # ahead of what it has from its mirrors, so every site waits for part of the run as
    # long as a clock computes in under 130 ms. With the real 45-107 ms a loaded machine's
    # slower clocks never got that far ahead.
    far = tmp_path / "far.yaml"
    far.write_text(
        "sites: [virginia, frankfurt, singapore]\ndefaults: {latency_ms: 400, bandwidth_mbps: 50}\n"
    )
    out = tmp_path / "job"
    process = start(out, "--geo", "asp", "--steps", "40", "--tls", "--topology", str(far))
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["runtime"] == "real"
    assert summary["clocks"] == 40
    assert summary["time_kind"] == "wall"
    finals = {site["final_accuracy"] for site in summary["sites"]}
    assert len(finals) == 1  # the closing round made every replica equal
    assert summary["final_accuracy"] == pytest.approx(finals.pop(), abs=1e-12)  # a mean
    assert summary["wan_bytes"] > 0
    assert len(summary["links"]) == 6
    assert summary["wan_bytes"] == sum(summary["links"].values())
    assert summary["time_to_target_s"] is not None
    stalls = {site["name"]: site["stall_s"] for site in summary["sites"]}
    assert all(0.2 < stall < summary["wall_s"] for stall in stalls.values()), stalls
    assert summary["stall_s"] == pytest.approx(sum(stalls.values()) / 3)
    assert (out / "timeline.png").exists()


def test_asp_with_a_lookahead_hands_every_worker_the_offset_of_every_shard(
    tmp_path: Path,
) -> None:
    out = tmp_path / "job"
    process = start(out, "--geo", "asp", "--steps", "20", "--staleness", "3", "--lookahead",
                    "0.5", "--sites", "2", "--workers", "2", "--shards", "2")  # fmt: skip
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["config"]["geo"]["lookahead"] == 0.5
    assert len({site["final_accuracy"] for site in summary["sites"]}) == 1
    for site in ("virginia", "frankfurt"):
        # each shard's last geo report
        last = {e.shard: e for e in events(out / "sites" / site / "log.jsonl", GeoStats)}
        assert sorted(last) == [0, 1]
        assert all(e.lookaheads for e in last.values()), last


@pytest.mark.timeout(900)
def test_a_killed_site_leaves_the_others_training_and_rejoins(tmp_path: Path) -> None:
    out = tmp_path / "job"
    process = start(out, "--geo", "asp", "--steps", "1200", "--staleness", "2")
    try:
        wait_until(lambda: site_step(out, "frankfurt") >= 40, 180, "frankfurt to reach clock 40")
        launched = events(out / "log.jsonl", SiteLaunched)
        pid = next(e.pid for e in launched if e.site == "frankfurt")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: bool(events(out / "log.jsonl", SiteDied)), 30, "the death")
        others = {s: site_step(out, s) for s in ("virginia", "singapore")}
        # The survivors stop counting the dead site once its lease runs out, and go on.
        wait_until(
            lambda: all(site_step(out, s) >= others[s] + 20 for s in others),
            120,
            "the others to go on",
        )
        _, stderr = process.communicate(timeout=800)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    restarts = [e for e in events(out / "log.jsonl", SiteLaunched) if e.site == "frankfurt"]
    assert [e.resume for e in restarts] == [False, True]
    died = events(out / "log.jsonl", SiteDied)
    assert [(e.site, e.how, e.restarting) for e in died] == [
        ("frankfurt", "killed by SIGKILL", True)
    ]
    joined = events(out / "sites" / "frankfurt" / "log.jsonl", GeoJoined)
    assert joined[-1].clock > 40  # it took a mirror's replica, not its own old checkpoint
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["clocks"] == 1200
    assert {site["name"]: site["restarts"] for site in summary["sites"]}["frankfurt"] == 1


def test_sites_that_hold_two_classes_each_measure_their_skew_and_run_synchronously(
    tmp_path: Path,
) -> None:
    out = tmp_path / "job"
    process = start(out, "--geo", "asp", "--steps", "20", "--partition", "label-skew:2")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "completed"
    for site in ("virginia", "frankfurt", "singapore"):
        last = events(out / "sites" / site / "log.jsonl", GeoStats)[-1]
        # Three sites with two classes each, none shared: each is 1 - 1/3 from the mix.
        assert last.label_skew == pytest.approx(2 / 3)
        assert last.staleness == 0
