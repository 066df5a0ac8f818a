"""`atoll sim --devices D`: a geo job whose sites train through D simulated devices each."""

from pathlib import Path

from atoll.platform.core.errors import AtollError
from atoll.platform.geo.job import GeoJob


def simulate_devices(
    spec: GeoJob,
    devices: int,
    profile: str,
    app_dir: Path | None,
    samples: int,
    out: Path,
    overwrite: bool,
) -> None:
    import torch

    from atoll.platform.core.events import TimelinePoint
    from atoll.platform.core.files import write_json
    from atoll.platform.core.rundir import claim_run_dir
    from atoll.platform.core.runlog import RunLog
    from atoll.platform.data.datasets import locate_fashion_mnist
    from atoll.platform.devices.site import initial_arrays
    from atoll.platform.sim.device_app import EXAMPLE_APP, DeviceApp
    from atoll.platform.sim.devices import PROFILES, DevicePoint, DeviceWorld, run_atoll, warm_up

    if profile not in PROFILES:
        raise AtollError(f"--device-profile must be one of {sorted(PROFILES)}, not {profile!r}")
    if spec.dataset != "fashion-mnist":
        raise AtollError("simulated devices run the device app on fashion-mnist only")
    partition = spec.partition_spec()
    if partition.kind not in ("iid", "dirichlet"):
        raise AtollError(f"devices take an iid or dirichlet partition, not {spec.partition}")
    topology, _ = spec.topologies()
    app = DeviceApp.load(app_dir or EXAMPLE_APP)
    claim_run_dir(out, overwrite)
    write_json(out / "config.json", spec.model_dump(mode="json") | {"devices_per_site": devices})
    config = {
        **app.config,
        "data-dir": str(locate_fashion_mnist(spec.data_dir)),
        "alpha": partition.alpha,
        "seed": spec.seed,
        "max-train-samples": samples,
    }
    torch.set_num_threads(1)
    world = DeviceWorld(
        topology=topology,
        devices_per_site=devices,
        app=app.client_app,
        run_config=config,
        profile=PROFILES[profile],
        initial=initial_arrays(app.model, spec.seed),
        evaluate=app.evaluator(config, spec.eval_samples),
    )
    warm_up(world)
    with RunLog(out / "log.jsonl") as log:

        def record(point: DevicePoint) -> None:
            log.write(
                TimelinePoint(
                    clock=point.round,
                    time_s=point.time_s,
                    mean_accuracy=point.accuracy,
                    min_accuracy=point.accuracy,
                    wan_bytes=point.wan_bytes,
                    links={},
                    stall_s=0.0,
                )
            )
            print(
                f"round {point.round}: accuracy {point.accuracy:.4f} | "
                f"{point.wan_bytes / 1e6:.2f} MB over the WAN | t={point.time_s:.1f} s virtual",
                flush=True,
            )

        links = run_atoll(world, spec.geo, spec.clocks, record)
    write_json(
        out / "summary.json",
        {"devices_per_site": devices, "sites": list(topology.sites), "links": links},
    )
    print(f"{len(topology.sites)} sites x {devices} {profile} devices, {spec.geo.label}: {out}")
