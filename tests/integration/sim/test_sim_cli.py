"""`atoll sim` end to end: the record it writes and the errors it names."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import atoll_in_process

pytestmark = pytest.mark.integration


def atoll(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atoll.cli", *args], capture_output=True, text=True, timeout=600
    )


def test_sim_writes_its_summary_log_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = atoll(
        "sim", "--topology", "gaia-11", "--sites", "4", "--geo", "asp", "--dataset", "digits",
        "--partition", "dirichlet:0.5", "--batch-size", "16", "--clocks", "30",
        "--eval-every", "10", "--eval-samples", "200", "--target-accuracy", "0.3",
        "--compute-profile", "0.02", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "final accuracy" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    for key in ("final_accuracy", "min_site_accuracy", "time_to_target_s", "wan_bytes", "stall_s"):
        assert key in summary
    assert summary["time_kind"] == "virtual"
    assert summary["clocks"] == 30
    assert len(summary["links"]) == 12
    assert summary["config"]["geo"]["policy"] == "asp"
    assert summary["min_site_accuracy"] <= summary["final_accuracy"]
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    points = [e for e in log if e["kind"] == "point"]
    assert [p["clock"] for p in points] == [10, 20, 30]
    assert "links" in points[0]
    assert (out / "timeline.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topology", "mars"], "no topology 'mars'"),
        (["--partition", "zipf"], "bad partition 'zipf'"),
        (["--geo", "gossip"], "'gossip' is not one of"),
        (["--sites", "12", "--topology", "gaia-11"], "has 11 sites, not 12"),
        (["--compute-profile", "fast"], "bad compute profile 'fast'"),
    ],
)
def test_bad_sim_options_are_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = atoll_in_process(
        "sim", "--dataset", "digits", "--clocks", "5", "--out", str(tmp_path / "r"), *args
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
