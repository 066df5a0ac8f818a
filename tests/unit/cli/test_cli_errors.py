"""Wrong options give one clear line, never a traceback."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import atoll_in_process as atoll


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "imagenet"], "'imagenet' is not one of"),
        (["--workers", "0"], "0 is not in the range x>=1"),
        (["--model", "resnet"], "'resnet' is not one of"),
        (["--lr", "-1"], "greater than 0"),
    ],
)
def test_bad_train_options_are_named(tmp_path: Path, args: list[str], message: str) -> None:
    result = atoll("train", "--out", str(tmp_path / "run"), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_data_is_one_line_that_says_how_to_install_it(tmp_path: Path) -> None:
    # A real process: what a user sees from the console script, and nothing else.
    result = subprocess.run(
        [sys.executable, "-m", "atoll.cli", "train", "--out", str(tmp_path / "run"),
         "--data-dir", str(tmp_path / "nowhere")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "atoll: error:" in result.stderr
    assert "apt-get install -y dataset-fashion-mnist" in result.stderr


def test_bad_partition_is_one_line() -> None:
    result = atoll(
        "data", "partition", "--sites", "3", "--dataset", "digits", "--partition", "zipf"
    )
    assert result.returncode == 2
    assert "bad partition 'zipf'" in result.stderr
    assert "Traceback" not in result.stderr


def test_partition_summary_prints_per_site_histograms() -> None:
    result = atoll(
        "data",
        "partition",
        "--sites",
        "3",
        "--dataset",
        "digits",
        "--partition",
        "label-skew:2",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert len(summary["sites"]) == 3
    assert all(sum(1 for c in site["class_counts"] if c) == 2 for site in summary["sites"])
