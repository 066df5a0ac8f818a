"""`atoll sim --devices`: every site of a job trains through simulated devices running the
example's stock ClientApp, and the sites sync over the topology's WAN links."""

from pathlib import Path

import pytest
from support import atoll_in_process

from atoll.platform.core.events import TimelinePoint, of_kind
from atoll.platform.core.runlog import read_events

pytestmark = pytest.mark.integration


def test_sites_train_through_their_devices(fashion_mnist: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = atoll_in_process(
        "sim", "--devices", "3", "--sites", "2", "--clocks", "2", "--eval-samples", "300",
        "--device-samples", "100",
        "--data-dir", str(fashion_mnist.parent), "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    points = of_kind(read_events(out / "log.jsonl"), TimelinePoint)
    assert [p.clock for p in points] == [1, 2]
    assert points[-1].wan_bytes > points[0].wan_bytes > 0
    assert points[0].time_s < points[1].time_s
    assert "2 sites x 3 mobile devices" in result.stdout


def test_devices_take_only_partitions_the_example_can_split(tmp_path: Path) -> None:
    result = atoll_in_process(
        "sim", "--devices", "3", "--partition", "label-skew:2", "--out", str(tmp_path / "r")
    )
    assert result.returncode == 2
    assert "devices take an iid or dirichlet partition" in result.stderr
