"""`atoll bench devices`, small: the two arms on the same devices, its JSON and plot, and
the byte count that follows from the arms' shapes."""

import json
from pathlib import Path

import pytest

from atoll.bench import devices

pytestmark = pytest.mark.integration


def test_the_devices_bench_compares_atoll_with_central_flower(
    fashion_mnist: Path, tmp_path: Path
) -> None:
    result = devices.run(
        quick=True, devices=2, rounds=2, target=0.2, out=tmp_path, data_dir=fashion_mnist.parent
    )
    saved = json.loads((tmp_path / "devices.json").read_text())
    assert saved["wan_bytes_ratio_vs_central"] == result["wan_bytes_ratio_vs_central"]
    assert (tmp_path / "devices.png").stat().st_size > 0
    central, atoll = saved["arms"]["central-flower"], saved["arms"]["atoll"]
    assert [p["round"] for p in central["timeline"]] == [1, 2]
    assert [p["round"] for p in atoll["timeline"]] == [1, 2]
    # Central: the 4 devices outside Virginia send and receive the model every round.
    model_bytes = central["wan_bytes"] / (2 * 2 * 4)
    assert model_bytes == pytest.approx(4 * 20_522, rel=0.03)  # the example's float32 weights
    # Atoll: only the sites' geo messages cross the WAN, fewer bytes than central's.
    assert 0 < atoll["wan_bytes"] < central["wan_bytes"]
    assert saved["accuracy_gap_vs_central"] == pytest.approx(
        central["final_accuracy"] - atoll["final_accuracy"]
    )
