"""What the agent's status says of its device tier: the rounds of the run last submitted
to its SuperLink, read from that run's log where its spec says (no Flower process here)."""

import logging
import time
from pathlib import Path

import pytest

from atoll.edge.devices import KEEP_ROUNDS, DevicesConfig, DeviceTier
from atoll.platform.core.events import DeviceRoundDone, TrainingFinished
from atoll.platform.core.runlog import RunLog
from atoll.platform.devices.spec import DeviceSiteSpec

EXAMPLE = Path(__file__).parents[3] / "examples" / "fashion-mnist-flower"


def round_done(r: int, silent: list[int] | None = None) -> DeviceRoundDone:
    return DeviceRoundDone(
        time=100.0 + r, round=r, devices=3, replied=3 - len(silent or []), refused=0, late=0,
        silent=silent or [], examples=300, device_accuracy=0.5, round_s=10.0 + r,
    )  # fmt: skip


def submit(tier: DeviceTier, out_dir: Path) -> None:
    """What FlowerSite.start_run leaves where the tier looks: the run's spec."""
    spec = DeviceSiteSpec(model="m:Net", out_dir=out_dir)
    (tier.site.work / "site.json").write_text(spec.model_dump_json())


def test_the_report_follows_the_run_last_submitted_round_by_round(tmp_path: Path) -> None:
    tier = DeviceTier(DevicesConfig(app=EXAMPLE, port=9092), tmp_path)
    report = tier.report()
    assert (report.superlink, report.up, report.rounds, report.run_dir) == (
        "0.0.0.0:9092", False, [], None,
    )  # fmt: skip
    tier.site.work.mkdir(parents=True)
    submit(tier, tmp_path / "run-1")
    with RunLog(tmp_path / "run-1" / "log.jsonl") as log:
        log.write(round_done(1))
        log.write(round_done(2, silent=[7]))
    report = tier.report()
    assert [(r.round, r.replied, r.dropped, r.examples) for r in report.rounds] == [
        (1, 3, 0, 300), (2, 2, 1, 300),
    ]  # fmt: skip
    assert report.run_dir == str(tmp_path / "run-1") and not report.finished
    with RunLog(tmp_path / "run-1" / "log.jsonl") as log:
        log.write(TrainingFinished(time=200.0, step=2, stopped=False))
    assert tier.report().finished

    # A new run: its own rounds only, however many the old one had.
    time.sleep(0.01)  # a new mtime for the spec file (nanoseconds)
    submit(tier, tmp_path / "run-2")
    with RunLog(tmp_path / "run-2" / "log.jsonl") as log:
        for r in range(1, KEEP_ROUNDS + 6):
            log.write(round_done(r))
    report = tier.report()
    assert [r.round for r in report.rounds] == list(range(6, KEEP_ROUNDS + 6))
    assert not report.finished


def test_a_second_run_in_the_same_log_starts_the_rounds_over(tmp_path: Path) -> None:
    tier = DeviceTier(DevicesConfig(app=EXAMPLE, port=9092), tmp_path)
    tier.site.work.mkdir(parents=True)
    submit(tier, tmp_path / "run")
    with RunLog(tmp_path / "run" / "log.jsonl") as log:
        for event in (round_done(1), round_done(2), round_done(1)):
            log.write(event)
    assert [r.round for r in tier.report().rounds] == [1]


def test_a_spec_it_cannot_read_is_logged_once_and_reports_no_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tier = DeviceTier(DevicesConfig(app=EXAMPLE, port=9092), tmp_path)
    tier.site.work.mkdir(parents=True)
    (tier.site.work / "site.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="atoll.edge"):
        reports = [tier.report() for _ in range(3)]  # the agent reports at every turn
    assert all(r.run_dir is None and not r.rounds for r in reports)
    assert len([r for r in caplog.records if "cannot read" in r.getMessage()]) == 1
