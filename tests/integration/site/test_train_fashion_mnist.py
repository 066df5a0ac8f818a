"""The README's main job: one epoch of Fashion-MNIST on a 2-worker, 2-shard site."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atoll.platform.core.events import StepDone, TrainingFinished, of_kind
from atoll.platform.core.runlog import read_events

pytestmark = pytest.mark.integration


def test_one_epoch_reaches_85_percent_and_writes_its_record(
    fashion_mnist: Path, tmp_path: Path
) -> None:
    out = tmp_path / "a"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "atoll.cli",
            "train",
            "--dataset",
            "fashion-mnist",
            "--data-dir",
            str(fashion_mnist),
            "--model",
            "cnn",
            "--workers",
            "2",
            "--shards",
            "2",
            "--epochs",
            "1",
            "--seed",
            "0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "test accuracy" in result.stdout
    assert "samples/s" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["test_accuracy"] >= 0.85
    assert summary["steps"] == 60000 // 128
    assert summary["samples_per_s"] > 0
    assert summary["wall_s"] > summary["train_s"] > 0
    assert summary["config"]["workers"] == 2
    assert summary["config"]["shards"] == 2
    log = read_events(out / "log.jsonl")
    steps = of_kind(log, StepDone)
    assert [e.step for e in steps] == list(range(1, summary["steps"] + 1))
    assert all(e.loss > 0 for e in steps)
    assert isinstance(log[-1], TrainingFinished)
    assert log[-1].test_accuracy == summary["test_accuracy"]
