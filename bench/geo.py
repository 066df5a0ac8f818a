"""The geo tier against its baselines, in the simulator.

For each scenario (topology x partition) every policy trains the same model on the
same data from the same seeds, with one compute profile measured once at the start,
and is scored on time to the target accuracy, WAN bytes, final accuracy and stall.
With several seeds a row is the mean over them, and it has a time to target only if
every seed reached the target: one lucky seed does not meet the bar.
Prints a table per scenario, writes JSON and a plot per scenario.
"""

import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from atoll.platform.core.files import write_json
from atoll.platform.core.plots import plot_timelines
from atoll.platform.data.datasets import load_dataset
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.sim.compute import ComputeProfile, compute_profile, measure_step_s
from atoll.platform.sim.simulator import GeoSimulation

_PROFILE_SAMPLES = 5
spawn = get_context("spawn")


@dataclass(frozen=True)
class Scenario:
    topology: str
    partition: str
    sites: int | None = None
    lan_links: bool = False  # the topology's sites over LAN links: the same math, no delay

    @property
    def name(self) -> str:
        delay = " (no delay)" if self.lan_links else ""
        return f"{self.topology}{delay}, {self.partition}"


@dataclass(frozen=True)
class Bar:
    """What the default asp must show against lan and bsp on a scenario (issue 17)."""

    time_vs_lan: float  # time to target, at most this times lan's
    bytes_vs_bsp: float  # WAN bytes over the run, at most this share of bsp's
    accuracy_below_lan: float  # final accuracy at most this below lan's


SKEWED_BAR = Bar(time_vs_lan=2.0, bytes_vs_bsp=0.05, accuracy_below_lan=0.01)
IID_BAR = Bar(time_vs_lan=1.25, bytes_vs_bsp=0.05, accuracy_below_lan=0.005)


def bar_for(partition: str) -> Bar:
    return IID_BAR if partition == "iid" else SKEWED_BAR


@dataclass(frozen=True)
class Plan:
    # What every run trains (data, model, clocks, the target); a run sets its scenario's
    # fields (named as the job's), its policy and its seed.
    job: GeoJob
    scenarios: tuple[Scenario, ...]
    policies: tuple[GeoSpec, ...]
    compute: str = "0.05"  # seconds per clock, as the bar states it; or "measured"

    @property
    def target(self) -> float:
        """The accuracy rows are timed to: every plan's job names one."""
        assert self.job.target_accuracy is not None
        return self.job.target_accuracy

    def run_job(self, scenario: Scenario, policy: GeoSpec, seed: int) -> GeoJob:
        return self.job.model_copy(update={**asdict(scenario), "geo": policy, "seed": seed})


DEFAULT = GeoSpec()  # what `atoll sim --geo asp` runs with no tuning flags
# Gaia's release as Atoll ran it before the sharded exchange, with its settings then.
RELEASE = GeoSpec(exchange="release", final="average")
GAIA_BEST = RELEASE.model_copy(
    update={"staleness": 4, "budget_mbps": 10.0, "lookahead": 0.5, "density": 1}
)  # the best Gaia-style row measured before tracking (adaptive threshold, DS=4, lookahead)
RELEASE_CAPPED = RELEASE.model_copy(
    update={"density": 0.006, "density_floor": 0.001, "staleness": 4}
)  # the default before the sharded exchange: release capped at 0.6% a clock
SHARDED = GeoSpec(exchange="sharded", density=0.05, density_floor=0.01, final="flush")
# the default before the direct exchange: through each piece's owner, 5% a clock
BASELINES = (
    GeoSpec(policy="lan"),
    GeoSpec(policy="bsp"),
    GeoSpec(policy="fedavg", period=20),  # dense local SGD: 5% of bsp's bytes by construction
    RELEASE.model_copy(update={"staleness": 0, "density": 1, "lookahead": 0}),  # Gaia, DS=0
    GAIA_BEST,
)

# What a plan on digits trains with: small batches, and every one of its 360 test images.
DIGITS: dict[str, Any] = {
    "dataset": "digits",
    "batch_size": 16,
    "eval_every": 10,
    "eval_samples": 360,
}

FULL = Plan(
    job=GeoJob(
        dataset="fashion-mnist",
        clocks=200,
        batch_size=64,
        target_accuracy=0.85,
        eval_every=20,
        eval_samples=1000,
    ),
    scenarios=(Scenario("gaia-11", "dirichlet:0.5"), Scenario("gaia-11", "iid")),
    policies=(
        *BASELINES,
        DEFAULT,
        SHARDED,
        RELEASE_CAPPED,
        # EF21-style tracking of every site's step, with the settings it was measured at
        GeoSpec(
            exchange="tracking", lookahead=1.0, density=0.006, density_floor=0.001, staleness=4
        ),
    ),
)

# Where the non-IID gap comes from: Gaia's filter or the WAN's delay (issue 17); trained
# as the bar is.
ABLATION = replace(
    FULL,
    scenarios=(
        Scenario("gaia-11", "dirichlet:0.5", lan_links=True),
        Scenario("gaia-11", "dirichlet:0.5"),
    ),
    policies=(
        GeoSpec(policy="lan"),
        # Gaia as Atoll ran it before issue 17 (DS=1, no lookahead), dense and filtered (1%)
        RELEASE.model_copy(update={"threshold": 0.0, "density": 1, "staleness": 1, "lookahead": 0}),
        RELEASE.model_copy(
            update={"threshold": 0.01, "density": 1, "staleness": 1, "lookahead": 0}
        ),
    ),
)

QUICK = Plan(
    job=GeoJob(**DIGITS, clocks=40, target_accuracy=0.8),
    scenarios=(Scenario("three-continents", "dirichlet:0.5"),),
    policies=(
        GeoSpec(policy="lan"),
        GeoSpec(policy="bsp"),
        GeoSpec(policy="fedavg", period=5),
        GeoSpec(policy="diloco", period=5),
        RELEASE.model_copy(update={"density": 1}),
        DEFAULT,
        GeoSpec(policy="none"),
    ),
    compute="measured",
)

PLANS = {"bar": FULL, "ablation": ABLATION, "quick": QUICK}
# The same scenarios on digits (1,797 images, a CNN of 53 k parameters, not 422 k), for a
# machine that cannot run the full plan: a proxy, reported as such.
SMALL = {**DIGITS, "target_accuracy": 0.9, "clocks": 60}


def run(
    quick: bool = False,
    out: Path = Path("bench/results/geo"),
    jobs: int = 2,
    compute: str | None = None,
    console: Console | None = None,
    seeds: int = 1,
    plan_name: str | None = None,
    only: tuple[str, ...] = (),
    clocks: int | None = None,
    small: bool = False,
) -> dict:
    """Run a plan ("bar", the default; "ablation"; "quick"), or the policies of it whose
    label contains one of `only` (lan and bsp always run: rows are scored against them),
    for `clocks` if given; `small`: on digits (see SMALL), the same scenarios for less."""
    plan = PLANS[plan_name or ("quick" if quick else "bar")]
    if small:
        plan = replace(plan, job=plan.job.model_copy(update=SMALL))
    if only:
        keep = [p for p in plan.policies if p.policy in ("lan", "bsp")]
        keep += [p for p in plan.policies if p not in keep and any(o in p.label for o in only)]
        plan = replace(plan, policies=tuple(keep))
    if clocks is not None:
        plan = replace(plan, job=plan.job.model_copy(update={"clocks": clocks}))
    compute = compute or plan.compute
    # Wide enough for the table when the output is a file, not a terminal.
    console = console or Console(width=180)
    job = plan.job
    train = load_dataset(job.dataset).train
    # One profile for every run, so policies differ only in what they do.
    if compute == "measured":
        step_s = statistics.median(
            measure_step_s(job.model, train, job.batch_size) for _ in range(_PROFILE_SAMPLES)
        )
        profile = ComputeProfile(step_s, source=f"measured here: {step_s * 1000:.1f} ms per clock")
    else:
        profile = compute_profile(compute, job.model, train, job.batch_size)
        step_s = profile.step_s
    console.print(f"compute profile: {profile.source}")
    results: dict[str, Any] = {
        "scenario": "geo",
        "plan": plan_name or ("quick" if quick else "bar"),
        "quick": quick,
        "dataset": job.dataset,
        "clocks": job.clocks,
        "batch_per_worker": job.batch_size,
        "target_accuracy": plan.target,
        "compute_step_s": step_s,
        "compute_profile": profile.source,
        "optimizer": job.optimizer.model_dump(),
        "default_policy": DEFAULT.label,
        "seeds": seeds,
        "small": small,
        "scenarios": {},
        "runs": {},
    }
    runs = [
        (scenario, policy, seed)
        for scenario in plan.scenarios
        for policy in plan.policies
        for seed in range(seeds)
    ]
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn())
    progress = Progress(*columns, TimeElapsedColumn(), console=console)
    # Each run is one process with one thread: runs in parallel use the cores well and
    # never change each other's results (virtual time does not depend on wall time).
    # A policy that runs on LAN links anyway (lan) is one job in every delay scenario.
    unique = {_job_key(*run): run for run in runs}
    with progress, ProcessPoolExecutor(jobs, mp_context=spawn, initializer=_one_thread) as pool:
        task = progress.add_task("geo bench", total=len(unique))
        futures = {pool.submit(_run_one, plan, *run, profile): key for key, run in unique.items()}
        finished: dict[tuple, dict] = {}
        for future in as_completed(futures):
            key = futures[future]
            finished[key] = future.result()
            progress.update(task, advance=1, description=f"{' '.join(map(str, key))} done")
    done = {(s.name, p.label, seed): finished[_job_key(s, p, seed)] for s, p, seed in runs}
    stem = "geo-quick" if quick else "geo" if plan_name in (None, "bar") else f"geo-{plan_name}"
    stem += "-small" if small else ""
    for scenario in plan.scenarios:
        # Each seed's runs are scored against lan and bsp on the same seed.
        by_seed = [
            [done[(scenario.name, p.label, seed)] for p in plan.policies] for seed in range(seeds)
        ]
        for seed_rows in by_seed:
            _score(seed_rows)
        results["runs"][scenario.name] = [row for seed_rows in by_seed for row in seed_rows]
        rows = [
            mean_over_seeds([seed_rows[i] for seed_rows in by_seed])
            for i in range(len(plan.policies))
        ]
        _score(rows)
        results["scenarios"][scenario.name] = rows
        verdict = check_bar(rows, bar_for(scenario.partition))
        results.setdefault("bar", {})[scenario.name] = verdict
        console.print(_table(scenario, rows, plan.target))
        console.print(_bar_table(scenario, verdict, plan.target))
        name = scenario.name.replace(" (no delay)", "-nodelay").replace(", ", "-")
        plot = plot_timelines(
            {r["policy"]: r["timeline"] for r in by_seed[0]},
            out / f"{stem}-{name.replace(':', '')}.png",
            f"{job.dataset} on {scenario.name} (simulated{', seed 0' if seeds > 1 else ''})",
            "virtual time (s)",
            plan.target,
        )
        console.print(f"plot: {plot}")
    path = out / f"{stem}.json"
    write_json(path, results)
    console.print(f"wrote {path}")
    return results


def _job_key(scenario: Scenario, policy: GeoSpec, seed: int) -> tuple:
    lan = scenario.lan_links or policy.uses_lan_links
    return (scenario.topology, scenario.partition, lan, policy.label, seed)


def _one_thread() -> None:
    torch.set_num_threads(1)


def _run_one(
    plan: Plan, scenario: Scenario, policy: GeoSpec, seed: int, profile: ComputeProfile
) -> dict:
    start = time.perf_counter()
    summary = GeoSimulation(plan.run_job(scenario, policy, seed), profile).run()
    keep = (
        "policy", "final_accuracy", "min_site_accuracy", "time_to_target_s", "clocks_to_target",
        "wan_bytes", "wan_bytes_to_target", "stall_s", "virtual_time_s", "clocks", "timeline",
        "links", "diverged",
    )  # fmt: skip
    return {**{k: summary[k] for k in keep}, "seed": seed, "wall_s": time.perf_counter() - start}


def mean_over_seeds(runs: list[dict]) -> dict:
    """One policy's row from its runs on every seed.

    Times and bytes to target are means over the seeds only if every seed reached the
    target; otherwise there is none, and `seeds_reached` says how many did.
    """
    reached = [r for r in runs if r["time_to_target_s"] is not None]
    every = len(reached) == len(runs)
    accuracy = [r["final_accuracy"] for r in runs]

    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in runs)

    return {
        "policy": runs[0]["policy"],
        "seeds": len(runs),
        "seeds_reached": len(reached),
        "final_accuracy": statistics.fmean(accuracy),
        "final_accuracy_range": max(accuracy) - min(accuracy),
        "min_site_accuracy": mean("min_site_accuracy"),
        "time_to_target_s": mean("time_to_target_s") if every else None,
        "clocks_to_target": mean("clocks_to_target") if every else None,
        "wan_bytes": mean("wan_bytes"),
        "wan_bytes_to_target": mean("wan_bytes_to_target") if every else None,
        "stall_s": mean("stall_s"),
        "virtual_time_s": mean("virtual_time_s"),
        "clocks": runs[0]["clocks"],
        "wall_s": sum(r["wall_s"] for r in runs),
        "seeds_diverged": sum(1 for r in runs if r.get("diverged")),
    }


def _score(rows: list[dict]) -> None:
    """Speed-up over bsp, time relative to lan, and bytes relative to bsp's (to the
    target, and over the whole run)."""
    by = {r["policy"]: r for r in rows}
    bsp, lan = by.get("bsp", {}), by.get("lan", {})
    for row in rows:
        t, b = row["time_to_target_s"], row["wan_bytes_to_target"]
        row["speedup_over_bsp"] = _ratio(bsp.get("time_to_target_s"), t)
        row["time_vs_lan"] = _ratio(t, lan.get("time_to_target_s"))
        row["bytes_to_target_vs_bsp"] = _ratio(b, bsp.get("wan_bytes_to_target"))
        row["bytes_vs_bsp"] = _ratio(row["wan_bytes"], bsp.get("wan_bytes"))


def check_bar(rows: list[dict], bar: Bar) -> dict[str, Any]:
    """Each asp row against the bar; the default policy's verdict is the one that counts.

    Time to target counts only if every seed reached the target (the row has a time
    then); bytes are over the whole run, against bsp's over the same clocks.
    """
    by = {r["policy"]: r for r in rows}
    lan = by.get("lan", {})
    lan_accuracy = lan.get("final_accuracy")
    checks = {}
    for r in rows:
        if not r["policy"].startswith("asp"):
            continue
        checks[r["policy"]] = {
            "time_vs_lan": _at_most(r["time_vs_lan"], bar.time_vs_lan),
            "bytes": _at_most(r["bytes_vs_bsp"], bar.bytes_vs_bsp),
            "accuracy": lan_accuracy is not None
            and r["final_accuracy"] >= lan_accuracy - bar.accuracy_below_lan,
        }
    default = checks.get(DEFAULT.label)
    return {
        "bar": bar.__dict__,
        "default_policy": DEFAULT.label,
        "default_met": default is not None and all(default.values()),
        "asp": checks,
    }


def _at_most(value: float | None, limit: float) -> bool:
    return value is not None and value <= limit


def _bar_table(scenario: Scenario, verdict: dict[str, Any], target: float) -> Table:
    bar = Bar(**verdict["bar"])
    table = Table(title=f"{scenario.name}: asp against the bar (the default's row counts)")
    headers = (
        f"time to {target:.0%} <= {bar.time_vs_lan}x lan",
        f"WAN bytes <= {bar.bytes_vs_bsp:.0%} of bsp",
        f"final acc >= lan - {bar.accuracy_below_lan * 100:g} pt",
    )
    table.add_column("policy")
    for h in headers:
        table.add_column(h, justify="center")
    for policy, checks in verdict["asp"].items():
        name = f"{policy} (default)" if policy == verdict["default_policy"] else policy
        table.add_row(name, *("MET" if ok else "NOT MET" for ok in checks.values()))
    table.caption = (
        "time to target: the replicas' mean accuracy at the evaluation clocks, every seed "
        "reaching it (means over the seeds); bytes over the whole run"
    )
    return table


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _table(scenario: Scenario, rows: list[dict], target: float) -> Table:
    table = Table(title=f"{scenario.name}: time to {target:.0%} test accuracy (simulated)")
    if rows and rows[0]["seeds"] > 1:
        table.caption = (
            f"means over {rows[0]['seeds']} seeds; a time to target only where every seed "
            "reached it; ± is half the range of the final accuracy"
        )
    headers = (
        "policy", "seeds at target", "time to target s", "x lan time", "speed-up vs bsp",
        "WAN MB to target", "WAN MB run", "bytes vs bsp", "final acc", "min site acc",
        "stall s/site",
    )  # fmt: skip
    for h in headers:
        table.add_column(h, justify="left" if h == "policy" else "right")

    def show(value: float | None, fmt: str) -> str:
        return "—" if value is None else format(value, fmt)

    for r in rows:
        mb = None if r["wan_bytes_to_target"] is None else r["wan_bytes_to_target"] / 1e6
        accuracy = show(r["final_accuracy"], ".3f")
        if r["seeds"] > 1:
            accuracy += f" ±{r['final_accuracy_range'] / 2:.3f}"
        table.add_row(
            r["policy"],
            f"{r['seeds_reached']}/{r['seeds']}"
            + (f" ({r['seeds_diverged']} diverged)" if r["seeds_diverged"] else ""),
            show(r["time_to_target_s"], ".1f"),
            show(r["time_vs_lan"], ".2f"),
            show(r["speedup_over_bsp"], ".1f"),
            show(mb, ".1f"),
            show(r["wan_bytes"] / 1e6, ".1f"),
            show(r["bytes_vs_bsp"], ".3f"),
            accuracy,
            show(r["min_site_accuracy"], ".3f"),
            show(r["stall_s"], ".1f"),
        )
    return table
