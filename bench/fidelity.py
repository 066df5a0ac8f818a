"""Does the simulator predict the real runtime?

Runs one geo job for real (site processes, shaped links on loopback) and in the
simulator replaying the compute time per clock the real sites measured, from the
same seed, several times. Compares the means: time to target accuracy (within 20%)
and WAN bytes (within 5%). One real run is not a reference on its own: thread timing
changes which updates a site has seen when it computes, so two real runs from one
seed differ too, and the table shows by how much.

A real site pauses its clocks to evaluate (every `eval_every` clocks); the simulator
replays that pause too, as each site's run log measured it. Without it the simulated
sites kept a pace the real ones never had around those clocks, and reached the
target one evaluation early (docs/geo-skew.md).
"""

import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from atoll.platform.core.files import write_json
from atoll.platform.core.rundir import claim_run_dir
from atoll.platform.core.runlog import read_events
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.sim.compute import ComputeProfile, eval_pause_s
from atoll.platform.sim.simulator import GeoSimulation
from atoll.platform.site.launch import GeoLaunch

TIME_TOLERANCE = 0.20
BYTES_TOLERANCE = 0.05


def fidelity_job(dataset: str, clocks: int, target: float) -> GeoJob:
    return GeoJob(
        dataset=dataset,
        topology="three-continents",
        partition="dirichlet:0.5",
        batch_size=32,
        geo=GeoSpec(),  # the default policy
        clocks=clocks,
        target_accuracy=target,
        eval_every=10,
        eval_samples=500,
    )


def eval_pauses(sites_dir: Path, names: Iterable[str], clocks: int) -> dict[str, float]:
    """Each real site's pause to evaluate, from its run log (sites without one: none)."""
    pauses = {}
    for name in names:
        pause = eval_pause_s(read_events(sites_dir / name / "log.jsonl"), clocks)
        if pause is not None:
            pauses[name] = pause
    return pauses


# (row, key in a run's summary, tolerance of the simulator's mean against the real one)
MEASURES: tuple[tuple[str, str, float | None], ...] = (
    ("time to target (s)", "time_to_target_s", TIME_TOLERANCE),
    ("WAN bytes", "wan_bytes", BYTES_TOLERANCE),
    ("stall s/site", "stall_s", None),
    ("final accuracy", "final_accuracy", None),
)


def run(
    dataset: str = "fashion-mnist",
    clocks: int = 200,
    target: float = 0.7,
    repeats: int = 3,
    out: Path = Path("bench/results/fidelity"),
    console: Console | None = None,
) -> dict[str, Any]:
    console = console or Console(width=120)  # the whole table, also in a log file
    job = fidelity_job(dataset, clocks, target)
    claim_run_dir(out, overwrite=True)
    pairs = []
    measured_pauses = []  # each real run's sites' evaluation pauses, replayed
    for i in range(repeats):
        console.print(f"[{i + 1}/{repeats}] real runtime: three site processes on loopback ...")
        (out / f"real-{i}").mkdir()
        real = GeoLaunch(job, out / f"real-{i}").run()
        measured = real["compute_profile"]
        names = [site["name"] for site in real["sites"]]
        pauses = eval_pauses(out / f"real-{i}" / "sites", names, clocks)
        measured_pauses.append(pauses)
        pause = statistics.fmean(pauses.values()) if pauses else 0.0
        profile = ComputeProfile(
            measured["step_s"], measured["sites"], "the real run's sites", pause, pauses
        )
        step_ms, pause_ms = measured["step_s"] * 1000, pause * 1000
        console.print(
            f"[{i + 1}/{repeats}] simulator, replaying {step_ms:.1f} ms per clock and "
            f"{pause_ms:.1f} ms per evaluation ..."
        )
        simulated = GeoSimulation(job, profile).run()
        pairs.append((real, simulated))
    table = Table(
        title=f"simulator fidelity: asp on three-continents, {dataset}, {clocks} clocks, "
        f"mean of {repeats} runs each"
    )
    columns = ("measure", "real", "real spread", "simulated", "error", "tolerance", "within")
    for column in columns:
        table.add_column(column, justify="left" if column == "measure" else "right")
    checks: dict[str, bool | None] = {}
    means: dict[str, dict[str, float | None]] = {}
    for name, key, tolerance in MEASURES:
        reals = [r[key] for r, _ in pairs if r[key] is not None]
        sims = [s[key] for _, s in pairs if s[key] is not None]
        a = statistics.fmean(reals) if reals else None
        b = statistics.fmean(sims) if sims else None
        spread = (max(reals) - min(reals)) / a if a and len(reals) > 1 else None
        error = abs(b - a) / a if a and b is not None else None
        within = None if tolerance is None or error is None else error <= tolerance
        if tolerance is not None:
            checks[name] = within
        means[key] = {"real": a, "simulated": b, "real_spread": spread, "error": error}
        missed = f" ({repeats - len(reals)} never)" if len(reals) < repeats else ""
        table.add_row(
            name,
            "—" if a is None else f"{a:.4g}{missed}",
            "—" if spread is None else f"{spread:.1%}",
            "—" if b is None else f"{b:.4g}",
            "—" if error is None else f"{error:.1%}",
            "" if tolerance is None else f"{tolerance:.0%}",
            "" if within is None else ("yes" if within else "NO"),
        )
    console.print(table)
    console.print("real spread: (max - min) / mean over the real runs, all from one seed")
    result = {
        "scenario": "fidelity",
        "job": job.model_dump(mode="json"),
        "repeats": repeats,
        "means": means,
        "runs": [
            {
                "real": {k: v for k, v in real.items() if k != "config"},
                "simulated": {k: v for k, v in simulated.items() if k != "config"},
                "eval_pauses_s": pauses,
            }
            for (real, simulated), pauses in zip(pairs, measured_pauses, strict=True)
        ],
        "checks": checks,
    }
    write_json(out / "fidelity.json", result)
    console.print(f"wrote {out / 'fidelity.json'}")
    return result
