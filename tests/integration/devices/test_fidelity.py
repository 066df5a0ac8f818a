"""Fidelity: with one site, no geo tier and the same devices, data and seed, Atoll's device
tier reproduces Flower's own FedAvg round for round (accuracy within 0.5 point).

Both run on one real SuperLink with the same real SuperNodes running the example's stock
ClientApp, side by side (two runs at once; Flower polls, so the wall time of one round is
mostly waiting): the example app as it is (its ServerApp is
`flwr.serverapp.strategy.FedAvg` over Flower's Grid, writing each round's federated
accuracy to `result-file`), and the same app with Atoll's ServerApp in its place."""

import json
import shutil
import time
from pathlib import Path

import pytest
from devices_support import EXAMPLE, MODEL, example_config, start_supernodes

from atoll.platform.devices.flower import SuperLinkOptions, run_status, submit
from atoll.platform.devices.launch import FlowerSite, stop_process
from atoll.platform.devices.spec import DeviceSiteSpec
from atoll.platform.net.ports import free_loopback_port

pytestmark = [pytest.mark.integration, pytest.mark.flower, pytest.mark.timeout(600)]

DEVICES, ROUNDS = 2, 2
DATA = {"alpha": 0.5, "max-train-samples": 150, "max-test-samples": 100}


def test_atoll_device_rounds_match_flower_fedavg_on_a_real_superlink(
    fashion_mnist: Path, tmp_path: Path
) -> None:
    config = example_config(fashion_mnist, **DATA)
    result_file = tmp_path / "flower-fedavg.json"
    spec = DeviceSiteSpec(
        model=MODEL,
        seed=int(config["seed"]),
        rounds=ROUNDS,
        min_replies=DEVICES,
        poll_s=0.5,
        round_timeout_s=240,
        train_config={"lr": float(config["lr"])},  # what the example's FedAvg sends
        out_dir=tmp_path / "atoll",
    )
    site = FlowerSite(spec, EXAMPLE, SuperLinkOptions(free_loopback_port()), tmp_path / "flower")
    flower_app = tmp_path / "flower-app"
    shutil.copytree(EXAMPLE, flower_app, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    nodes = []
    try:
        site.start_superlink()
        nodes = start_supernodes(site.superlink.address, DEVICES, DEVICES, tmp_path)

        run_config = {**DATA, "data-dir": str(fashion_mnist), "num-server-rounds": ROUNDS}
        flower_run = submit(site.home, flower_app, {**run_config, "result-file": str(result_file)})
        site.start_run(run_config)
        site.wait(timeout_s=300)
        deadline = time.monotonic() + 120
        while not (status := run_status(site.home, flower_run)).startswith("finished"):
            assert time.monotonic() < deadline, f"Flower's FedAvg run: {status}"
            time.sleep(2)
        assert status == "finished:completed", f"see {site.work}/superexec.log"
    finally:
        for node in nodes:
            stop_process(node)
        site.stop()

    flower_rounds = json.loads(result_file.read_text())
    flower_accuracy = [float(flower_rounds[str(r)]["eval_acc"]) for r in range(1, ROUNDS + 1)]
    done = site.rounds_done()
    assert [d.replied for d in done] == [DEVICES] * ROUNDS
    atoll_accuracy = [d.device_accuracy for d in done]
    for r, (ours, theirs) in enumerate(zip(atoll_accuracy, flower_accuracy, strict=True), 1):
        assert ours is not None
        assert abs(ours - theirs) <= 0.005, f"round {r}: atoll {ours:.4f}, flower {theirs:.4f}"
    assert atoll_accuracy[-1] > 0.2  # and they learned (10 classes: chance is 0.1)
