"""Site-tier overhead: samples/s of a 1-worker and a 2-worker site against a plain
PyTorch loop of the same model and batch on the same cores, in one run.

Target: the 1-worker site reaches at least 0.95 of the plain loop.
"""

import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from atoll.platform.core.files import write_json
from atoll.platform.data.datasets import load_dataset
from atoll.platform.site.reference import train_single_process
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

TARGET_RATIO = 0.95
_WARMUP_STEPS = 20
_PLAIN = "plain loop"


def run(
    steps: int = 1000,  # shorter runs are dominated by start-up jitter on a 2-core VM
    batch_size: int = 64,
    repeats: int = 3,
    dataset: str = "fashion-mnist",
    model: str = "cnn",
    out: Path = Path("bench/results/site_overhead.json"),
    console: Console | None = None,
) -> dict:
    console = console or Console()
    cores = os.cpu_count() or 1
    train = load_dataset(dataset).train
    job = SiteJob(dataset=dataset, model=model, batch_size=batch_size, steps=steps)

    def plain_loop(repeat: int, tmp: Path) -> float:
        torch.set_num_threads(cores)
        train_single_process(job, train, _WARMUP_STEPS)
        return train_single_process(job, train, steps).samples_per_s(batch_size)

    def site(workers: int) -> Callable[[int, Path], float]:
        def measure(repeat: int, tmp: Path) -> float:
            update = {"workers": workers, "shards": workers, "checkpoint_every": steps}
            out = tmp / f"{repeat}-{workers}"
            return train_site(job.model_copy(update=update), out, overwrite=True)["samples_per_s"]

        return measure

    setups = {_PLAIN: plain_loop, "site, 1 worker": site(1), "site, 2 workers": site(2)}
    samples: dict[str, list[float]] = {name: [] for name in setups}
    with tempfile.TemporaryDirectory(prefix="atoll-bench-") as tmp:
        for repeat in range(repeats):
            # The order rotates every repeat: a VM's speed drifts over minutes (seen here:
            # 1500 to 2200 samples/s for the same loop), and a fixed order would charge
            # that drift to whichever setup always runs last.
            names = list(setups)
            names = names[repeat % len(names) :] + names[: repeat % len(names)]
            console.print(f"repeat {repeat + 1}/{repeats}: {', '.join(names)}")
            for name in names:
                samples[name].append(setups[name](repeat, Path(tmp)))
    plain_median = statistics.median(samples[_PLAIN])
    rows: list[dict[str, Any]] = [
        {
            "setup": name,
            "samples_per_s": statistics.median(values),
            "runs": values,
            "ratio_to_plain": statistics.median(values) / plain_median,
        }
        for name, values in samples.items()
    ]
    result = {
        "scenario": "site_overhead",
        "dataset": dataset,
        "model": model,
        "batch_per_worker": batch_size,
        "steps": steps,
        "repeats": repeats,
        "cores": cores,
        "target_1_worker_ratio": TARGET_RATIO,
        "rows": rows,
    }
    table = Table(
        title=f"site overhead: {model} on {dataset}, batch {batch_size}/worker, {cores} cores"
    )
    for column in ("setup", "samples/s (median)", "ratio to plain loop"):
        table.add_column(column, justify="right" if column != "setup" else "left")
    for row in rows:
        table.add_row(row["setup"], f"{row['samples_per_s']:.0f}", f"{row['ratio_to_plain']:.3f}")
    console.print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, result)
    console.print(f"wrote {out}")
    return result
