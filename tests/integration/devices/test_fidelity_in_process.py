"""Fidelity in the simulator's terms: through the in-process Grid the simulator plays
devices with (LocalGrid), Atoll's device site and Flower's own FedAvg
(`flwr.serverapp.strategy.FedAvg.start`) give the same accuracy round for round. The issue's
fidelity test, on a real SuperLink and SuperNodes, is test_fidelity.py; this one is cheap
(no Flower processes), so it runs with every test and covers more devices and rounds."""

from pathlib import Path

import pytest
from devices_support import MODEL, local_devices
from flwr.app import ConfigRecord
from flwr.serverapp.strategy import FedAvg

from atoll.platform.core.events import RunEvent
from atoll.platform.devices.records import to_record
from atoll.platform.devices.site import DeviceSite, initial_arrays
from atoll.platform.devices.spec import DeviceSiteSpec

pytestmark = pytest.mark.integration

DEVICES, ROUNDS = 4, 3
DATA = {"alpha": 0.5, "max-train-samples": 400, "max-test-samples": 150}


def test_atoll_device_rounds_match_flower_fedavg_every_round(
    fashion_mnist: Path, tmp_path: Path
) -> None:
    initial = initial_arrays(MODEL, seed=0)

    flower = FedAvg(min_train_nodes=1, min_evaluate_nodes=1, min_available_nodes=1)
    result = flower.start(
        grid=local_devices(fashion_mnist, list(range(DEVICES)), DEVICES, **DATA),
        initial_arrays=to_record(initial),
        num_rounds=ROUNDS,
        train_config=ConfigRecord({}),
    )
    flower_accuracy = [
        float(result.evaluate_metrics_clientapp[r]["eval_acc"]) for r in range(1, ROUNDS + 1)
    ]

    events: list[RunEvent] = []
    spec = DeviceSiteSpec(model=MODEL, rounds=ROUNDS, poll_s=0.01, out_dir=tmp_path)
    grid = local_devices(fashion_mnist, list(range(DEVICES)), DEVICES, **DATA)
    DeviceSite(spec, grid, initial, events.append).run()
    atoll_accuracy = [e.device_accuracy for e in events if e.kind == "device_round"]

    assert len(atoll_accuracy) == ROUNDS
    for r, (ours, theirs) in enumerate(zip(atoll_accuracy, flower_accuracy, strict=True), 1):
        assert ours is not None
        assert abs(ours - theirs) <= 0.005, f"round {r}: atoll {ours:.4f}, flower {theirs:.4f}"
    assert atoll_accuracy[-1] > 0.3  # and they learned (10 classes: chance is 0.1)
