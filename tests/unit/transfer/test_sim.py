"""The simulator on digits: real training, small enough for a unit test."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atoll.cli.main import app
from atoll.platform.data.datasets import TrainTest, load_dataset
from atoll.platform.transfer.adapt import time_to_adapt
from atoll.platform.transfer.config import CartelConfig
from atoll.platform.transfer.scenarios import build_streams
from atoll.platform.transfer.sim import SimSettings, run_simulation


@pytest.fixture(scope="module")
def digits() -> TrainTest:
    return load_dataset("digits")


def test_time_to_adapt_counts_from_the_onset_to_the_first_full_window_back() -> None:
    accuracy = [0.9] * 10 + [0.5, 0.6, 0.9, 0.9, 0.9, 0.9]
    adaptation = time_to_adapt(accuracy, onset=10)
    assert adaptation.adapted
    assert adaptation.batches == 5  # windows 12..14 is the first at >= 0.88
    never = time_to_adapt([0.9] * 10 + [0.5] * 6, onset=10)
    assert not never.adapted and never.batches == 6


def test_scenarios_drift_the_chosen_sites_only() -> None:
    streams = build_streams("class-emergence", 8, 90, 10)
    assert [s.site for s in streams if s.onsets] == [1, 2]
    assert streams[1].onsets == [30]
    assert (streams[1].phases[1].priors == streams[0].phases[0].priors).all()
    recurring = build_streams("recurring", 8, 80, 10)
    assert recurring[1].onsets == [20, 40, 60]
    with pytest.raises(ValueError, match="unknown scenario"):
        build_streams("sudden", 8, 90, 10)


def test_cartel_transfers_from_a_site_that_knows_the_new_classes(digits: TrainTest) -> None:
    result = run_simulation(SimSettings("class-emergence", "logreg", "cartel", batches=120), digits)
    transfers = {(t["site"], t["source"]) for s in result.sites for t in s.transfers}
    # site 1 takes site 0's classes {0..3}: sites 0 and 5 have exactly that mix.
    assert any(site == "site-1" and source in ("site-0", "site-5") for site, source in transfers)
    assert result.bytes_by_kind["model-part"] > 0
    isolated = run_simulation(
        SimSettings("class-emergence", "logreg", "isolated", batches=120), digits
    )
    cartel_adapt = result.summary()["adapt_batches"]
    assert cartel_adapt < isolated.summary()["adapt_batches"]
    assert isolated.total_bytes == 0


def test_a_dead_neighbour_is_skipped(digits: TrainTest) -> None:
    # Logistic regression on 8x8 digits is still weak at the drift (about 0.6): a lower
    # bar, so that more than one neighbour qualifies and the next one can be tried.
    config = CartelConfig(k=3, min_neighbour_accuracy=0.5)
    events: list[dict[str, object]] = []
    run_simulation(
        SimSettings("class-emergence", "logreg", batches=120, dead_sites=(0,), cartel=config),
        digits,
        events.append,
    )
    failed = [e for e in events if e.get("event") == "fetch-failed"]
    merged = [e for e in events if e["kind"] == "transfer" and e["site"] == "site-1"]
    assert not failed or merged, "after a dead neighbour the site fetched from the next one"
    assert all(e["source"] != "site-0" for e in merged)


def test_centralized_counts_raw_data_and_pushes(digits: TrainTest) -> None:
    result = run_simulation(SimSettings("prior-shift", "logreg", "centralized", batches=60), digits)
    assert result.bytes_by_kind["raw-data"] == 8 * 60 * 10 * (
        64 + 1
    )  # sites x batches x samples x (pixels + label)
    assert result.bytes_by_kind["model-push"] == 8 * 6 * result.model_bytes


def test_cli_writes_summary_log_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["cartel", "sim", "--sites", "4", "--dataset", "digits", "--batches", "60"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"] == "cartel" and summary["scenario"] == "class-emergence"
    kinds = {json.loads(line)["kind"] for line in (out / "log.jsonl").read_text().splitlines()}
    assert {"accuracy", "bytes"} <= kinds
    assert (out / "accuracy.png").stat().st_size > 0
    again = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert again.exit_code != 0 and "--overwrite" in str(again.exception)
