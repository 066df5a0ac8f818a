"""`atoll bench devices`: the device tier against one central Flower server, in the simulator.

Three regions (three-continents), D devices each (a mobile profile), Fashion-MNIST split
across all devices by Dirichlet(0.5), the example app's ClientApp training on them:
- central-flower: every device talks to one Flower server (Flower's FedAvg) in Virginia;
- atoll: each device talks to its region's site; sites sync by the default geo policy.
Prints a table, writes devices.json (with wan_bytes_ratio_vs_central and
accuracy_gap_vs_central) and devices.png.
"""

import time
from pathlib import Path
from typing import Any

import torch

from atoll.platform.core.files import write_json
from atoll.platform.core.plots import plot_timelines
from atoll.platform.data.datasets import locate_fashion_mnist
from atoll.platform.devices.site import initial_arrays
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.net.topology import load_topology
from atoll.platform.sim.device_app import EXAMPLE_APP, DeviceApp
from atoll.platform.sim.devices import (
    PROFILES,
    DevicePoint,
    DeviceWorld,
    run_atoll,
    run_central,
    warm_up,
)


def time_to(points: list[DevicePoint], target: float) -> float | None:
    return next((p.time_s for p in points if p.accuracy >= target), None)


def run(
    quick: bool,
    devices: int,
    rounds: int | None,
    target: float,
    out: Path,
    example: Path = EXAMPLE_APP,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    app = DeviceApp.load(example)
    folder = locate_fashion_mnist(data_dir)
    rounds = rounds or (6 if quick else 15)
    config = {
        **app.config,
        "data-dir": str(folder),
        "alpha": 0.5,
        "max-train-samples": 150 if quick else 500,
    }
    torch.set_num_threads(1)
    world = DeviceWorld(
        topology=load_topology("three-continents"),
        devices_per_site=devices,
        app=app.client_app,
        run_config=config,
        profile=PROFILES["mobile"],
        initial=initial_arrays(app.model, int(config["seed"])),
        evaluate=app.evaluator(config, 1000 if quick else 5000),
    )
    warm_up(world)
    timelines: dict[str, list[DevicePoint]] = {"central-flower": [], "atoll": []}
    started = time.perf_counter()
    run_central(world, rounds, timelines["central-flower"].append)
    links = run_atoll(world, GeoSpec(), rounds, timelines["atoll"].append)
    wall_s = time.perf_counter() - started
    rows: dict[str, dict[str, Any]] = {}
    for arm, points in timelines.items():
        rows[arm] = {
            "final_accuracy": points[-1].accuracy,
            "wan_bytes": points[-1].wan_bytes,
            "time_to_target_s": time_to(points, target),
            "virtual_time_s": points[-1].time_s,
            "timeline": [
                {
                    "round": p.round,
                    "time_s": p.time_s,
                    "wan_bytes": p.wan_bytes,
                    "mean_accuracy": p.accuracy,
                }
                for p in points
            ],
        }
    central, atoll = rows["central-flower"], rows["atoll"]
    result = {
        "scenario": "three-continents",
        "devices_per_region": devices,
        "device_profile": "mobile",
        "partition": "dirichlet(0.5) over devices",
        "rounds": rounds,
        "target_accuracy": target,
        "geo_policy": GeoSpec().label,
        "quick": quick,
        "wall_s": wall_s,
        "arms": rows,
        "atoll_links": links,
        "wan_bytes_ratio_vs_central": central["wan_bytes"] / max(atoll["wan_bytes"], 1),
        "accuracy_gap_vs_central": central["final_accuracy"] - atoll["final_accuracy"],
        "target_no_later": atoll["time_to_target_s"] is not None
        and (
            central["time_to_target_s"] is None
            or atoll["time_to_target_s"] <= central["time_to_target_s"]
        ),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "devices.json", result)
    plot_timelines(
        {arm: row["timeline"] for arm, row in rows.items()},
        out / "devices.png",
        f"{devices} mobile devices per region, three-continents, Dirichlet(0.5)",
        "virtual time (s)",
        target,
    )
    _print(result)
    return result


def _print(result: dict[str, Any]) -> None:
    print(f"{'arm':16} {'final acc':>9} {'WAN MB':>9} {'time to target':>15} {'virtual s':>10}")
    for arm, row in result["arms"].items():
        reached = row["time_to_target_s"]
        print(
            f"{arm:16} {row['final_accuracy']:9.4f} {row['wan_bytes'] / 1e6:9.2f} "
            f"{'not reached' if reached is None else f'{reached:.1f} s':>15} "
            f"{row['virtual_time_s']:10.1f}"
        )
    print(
        f"WAN bytes: central-flower / atoll = {result['wan_bytes_ratio_vs_central']:.1f}x; "
        f"accuracy gap {100 * result['accuracy_gap_vs_central']:+.2f} points; "
        f"target no later: {result['target_no_later']}"
    )
