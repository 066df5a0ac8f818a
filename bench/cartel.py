"""`atoll bench cartel`: Cartel against isolated, centralized, fedavg and random-neighbour.

Per scenario and policy, means over seeds: batches and simulated seconds to adapt
after drift, bytes moved by kind, model size, training time per site, metadata
load. Per scenario the headline ratios for cartel. Prints a table, writes
bench/results/cartel/cartel.json and cartel.png.
"""

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from atoll.platform.core.files import write_json
from atoll.platform.data.datasets import load_dataset
from atoll.platform.transfer.adapt import SMOOTH
from atoll.platform.transfer.config import MERGE_POLICIES, CartelConfig
from atoll.platform.transfer.plots import plot_bench
from atoll.platform.transfer.sim import POLICIES, SimSettings, run_simulation

HEADLINE = ("class-emergence", "prior-shift")
TARGETS = {"speedup": 4.0, "bytes_ratio": 1000.0, "accuracy_gap": 0.02}
BATCH_SECONDS = SimSettings.batch_seconds  # the simulator's default, which the bench keeps


def variants(merges: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(row name, simulator policy, merge): cartel by each merge, then the baselines."""
    rows = [(f"cartel[{m}]", "cartel", m) for m in merges]
    return rows + [(p, p, "sample-weighted") for p in POLICIES if p != "cartel"]


def mean_row(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        values = [r[key] for r in runs if r[key] is not None]
        return float(np.mean(values)) if values else None

    kinds = sorted({k for r in runs for k in r["bytes_by_kind"]})
    return {
        "policy": name,
        "seeds": len(runs),
        "adapt_batches": mean("adapt_batches"),
        "adapt_seconds": mean("adapt_seconds"),
        "adapt_batches_per_seed": [r["adapt_batches"] for r in runs],
        "all_adapted": all(r["all_adapted"] for r in runs),
        "final_accuracy": mean("final_accuracy"),
        "bytes": mean("bytes"),
        "bytes_by_kind": {
            k: float(np.mean([r["bytes_by_kind"].get(k, 0) for r in runs])) for k in kinds
        },
        "bytes_per_site_hour": float(
            np.mean([r["bytes"] / r["sites"] / (r["batches"] * BATCH_SECONDS / 3600) for r in runs])
        ),
        "bytes_per_seed": [r["bytes"] for r in runs],
        "final_accuracy_per_seed": [r["final_accuracy"] for r in runs],
        "model_bytes": runs[0]["model_bytes"],
        "train_s_per_site": mean("train_s_per_site"),
        "reports_per_s": mean("reports_per_s"),
        "query_ms_mean": mean("query_ms_mean"),
        "transfers": float(np.mean([len(r["transfers"]) for r in runs])),
    }


def headline(rows: list[dict[str, Any]], cartel: str) -> dict[str, Any]:
    by = {r["policy"]: r for r in rows}
    c, iso, cen, rnd = by[cartel], by["isolated"], by["centralized"], by["random-neighbour"]
    speedup = iso["adapt_batches"] / c["adapt_batches"]
    bytes_ratio = cen["bytes"] / c["bytes"]
    gap = cen["final_accuracy"] - c["final_accuracy"]
    beats_random = c["adapt_batches"] < rnd["adapt_batches"]
    return {
        "cartel": cartel,
        "adapt_speedup_vs_isolated": speedup,
        # No policy can adapt in fewer batches than the rolling window: isolated's time
        # over it is the most any transfer could gain under this metric.
        "adapt_floor_batches": SMOOTH,
        "max_speedup_vs_isolated_at_floor": iso["adapt_batches"] / SMOOTH,
        "bytes_ratio_vs_centralized": bytes_ratio,
        "accuracy_gap_vs_centralized": gap,
        "adapt_speedup_vs_random_neighbour": rnd["adapt_batches"] / c["adapt_batches"],
        "beats_random_neighbour": beats_random,
        "targets_met": {
            "speedup_ge_4x": speedup >= TARGETS["speedup"],
            "bytes_ratio_ge_1000x": bytes_ratio >= TARGETS["bytes_ratio"],
            "within_2_points_of_centralized": gap <= TARGETS["accuracy_gap"],
            "beats_random_neighbour": beats_random,
        },
    }


def run(
    quick: bool,
    out: Path,
    seeds: int,
    dataset: str,
    model: str,
    batches: int,
    batch_size: int,
    default_merge: str = "sample-weighted",
) -> dict[str, Any]:
    torch.set_num_threads(1)  # small models: one thread is faster and leaves the rest alone
    if quick:
        dataset, batches, seeds = "digits", 120, 1
    data = load_dataset(dataset)
    scenarios = ("class-emergence", "prior-shift") if quick else (*HEADLINE, "recurring")
    merges = tuple(MERGE_POLICIES)
    results: dict[str, list[dict[str, Any]]] = {}
    headlines: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for scenario in scenarios:
        rows = []
        for name, policy, merge in variants(merges):
            runs = []
            for seed in range(seeds):
                settings = SimSettings(
                    scenario,
                    model,
                    policy,
                    batches=batches,
                    batch_size=batch_size,
                    seed=seed,
                    cartel=CartelConfig(merge=merge),
                )
                runs.append(run_simulation(settings, data).summary())
            row = mean_row(name, runs)
            rows.append(row)
            print(
                f"{scenario:16s} {name:26s} adapt {row['adapt_batches']:6.1f} batches "
                f"| acc {row['final_accuracy']:.4f} | {row['bytes'] / 1e3:10.1f} kB "
                f"| {row['transfers']:.1f} transfers",
                flush=True,
            )
        results[scenario] = rows
        headlines[scenario] = headline(rows, f"cartel[{default_merge}]")
    print()
    print(
        f"{'scenario':16s} {'speedup vs isolated':>20s} {'bytes: centralized/cartel':>26s} "
        f"{'acc gap to centralized':>23s} {'vs random':>10s} {'floor-bound':>12s}"
    )
    for scenario, h in headlines.items():
        print(
            f"{scenario:16s} {h['adapt_speedup_vs_isolated']:19.2f}x "
            f"{h['bytes_ratio_vs_centralized']:25.0f}x "
            f"{100 * h['accuracy_gap_vs_centralized']:+22.2f}p "
            f"{h['adapt_speedup_vs_random_neighbour']:9.2f}x "
            f"{h['max_speedup_vs_isolated_at_floor']:11.2f}x"
        )
    record = {
        "command": "atoll bench cartel --quick"
        if quick
        else f"atoll bench cartel --batches {batches} --seeds {seeds} --batch-size {batch_size}",
        "dataset": dataset,
        "model": model,
        "sites": 8,
        "batches": batches,
        "batch_size": batch_size,
        "seeds": seeds,
        "default_merge": default_merge,
        "detector": CartelConfig().detector,
        "targets": TARGETS,
        "scenarios": {s: {**headlines[s], "rows": results[s]} for s in scenarios},
        "wall_s": time.perf_counter() - started,
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "cartel.json", record)
    plot_bench(
        results, out / "cartel.png", f"Cartel vs baselines, {dataset}, {model}, {seeds} seed(s)"
    )
    print(f"wrote {out / 'cartel.json'} and {out / 'cartel.png'}")
    return record
