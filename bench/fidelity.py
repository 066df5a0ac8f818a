"""Does the simulator predict the real runtime?

Runs one geo job twice from the same seed: for real (site processes, shaped links
on loopback) and in the simulator, replaying the compute time per clock the real
sites measured. Compares time to target accuracy (within 20%) and WAN bytes
(within 5%).
"""

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from atoll.platform.core.files import write_json
from atoll.platform.core.rundir import claim_run_dir
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.launch import GeoLaunch
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.sim.compute import ComputeProfile
from atoll.platform.sim.simulator import GeoSimulation

TIME_TOLERANCE = 0.20
BYTES_TOLERANCE = 0.05


def fidelity_job(dataset: str, clocks: int, target: float) -> GeoJob:
    return GeoJob(
        dataset=dataset,
        topology="three-continents",
        partition="dirichlet:0.5",
        batch_size=32,
        geo=GeoSpec(policy="asp", staleness=4),
        clocks=clocks,
        target_accuracy=target,
        eval_every=10,
        eval_samples=500,
    )


def run(
    dataset: str = "fashion-mnist",
    clocks: int = 200,
    target: float = 0.75,
    out: Path = Path("bench/results/fidelity"),
    console: Console | None = None,
) -> dict[str, Any]:
    console = console or Console()
    job = fidelity_job(dataset, clocks, target)
    claim_run_dir(out, overwrite=True)
    console.print("real runtime: three site processes on loopback ...")
    (out / "real").mkdir()
    real = GeoLaunch(job, out / "real").run()
    measured = real["compute_profile"]
    profile = ComputeProfile(measured["step_s"], measured["sites"], "the real run's sites")
    console.print(f"simulator, replaying {measured['step_s'] * 1000:.1f} ms per clock ...")
    simulated = GeoSimulation(job, profile).run()
    rows = {
        "time to target (s)": (
            real["time_to_target_s"],
            simulated["time_to_target_s"],
            TIME_TOLERANCE,
        ),
        "WAN bytes": (real["wan_bytes"], simulated["wan_bytes"], BYTES_TOLERANCE),
        "final accuracy": (real["final_accuracy"], simulated["final_accuracy"], None),
        "stall s/site": (real["stall_s"], simulated["stall_s"], None),
    }
    table = Table(title=f"simulator fidelity: asp on three-continents, {dataset}, {clocks} clocks")
    for column in ("measure", "real", "simulated", "error", "tolerance", "within"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    checks = {}
    for name, (a, b, tolerance) in rows.items():
        error = abs(b - a) / a if a and b is not None else None
        within = None if tolerance is None or error is None else error <= tolerance
        if tolerance is not None:
            checks[name] = within
        table.add_row(
            name,
            "—" if a is None else f"{a:.4g}",
            "—" if b is None else f"{b:.4g}",
            "—" if error is None else f"{error:.1%}",
            "" if tolerance is None else f"{tolerance:.0%}",
            "" if within is None else ("yes" if within else "NO"),
        )
    console.print(table)
    result = {
        "scenario": "fidelity",
        "job": job.model_dump(mode="json"),
        "real": {k: v for k, v in real.items() if k != "config"},
        "simulated": {k: v for k, v in simulated.items() if k != "config"},
        "checks": checks,
    }
    write_json(out / "fidelity.json", result)
    console.print(f"wrote {out / 'fidelity.json'}")
    return result
