"""Site-tier overhead: samples/s of a 1-worker site against a plain PyTorch loop of the
same model and batch at the same thread count (1), and of a 2-worker site (2 x 1 thread)
against the 1-worker site (weak scaling: each worker keeps its batch).

Targets: `ratio_1_worker` >= 0.95; `scaling_2_workers` >= 1.8. The setups alternate
(the order rotates every repeat) and each figure is the median of the repeats, with
their spread: a shared VM's speed drifts over minutes. The load average before and after
is recorded, because on a busy machine these figures measure the neighbours too.

Every measurement runs in a fresh Python process (`python -m atoll.bench.site_overhead`),
so that no setup inherits the allocator, fork server or thread pools of the ones before
it: an earlier session saw sites measured in the bench's own process slow down repeat
after repeat while a site run alone kept up with the plain loop. Fresh processes did not
close the gap by themselves (0.84 in the run the README reports).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
TARGET_SCALING = 1.8
_WARMUP_STEPS = 20
PLAIN, ONE, TWO = "plain loop, 1 thread", "site, 1 worker x 1 thread", "site, 2 workers x 1 thread"
SETUPS = [PLAIN, ONE, TWO]


@contextmanager
def _one_thread(pin: bool) -> Iterator[None]:
    """The plain loop at the site's thread count, on the core rank 0 would be pinned to."""
    threads = torch.get_num_threads()
    cores = os.sched_getaffinity(0)
    torch.set_num_threads(1)
    if pin:
        os.sched_setaffinity(0, {min(cores)})
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        os.sched_setaffinity(0, cores)


def run(
    steps: int = 300,
    batch_size: int = 64,
    repeats: int = 5,
    dataset: str = "fashion-mnist",
    model: str = "cnn",
    pin_cores: bool = True,
    out: Path = Path("bench/results/site.json"),
    console: Console | None = None,
) -> dict[str, Any]:
    console = console or Console()
    load_before = os.getloadavg()
    job = SiteJob(
        dataset=dataset, model=model, batch_size=batch_size, steps=steps, threads=1,
        pin_cores=pin_cores, checkpoint_every=steps,
    )  # fmt: skip

    samples: dict[str, list[float]] = {name: [] for name in SETUPS}
    with tempfile.TemporaryDirectory(prefix="atoll-bench-") as tmp:
        for repeat in range(repeats):
            names = SETUPS[repeat % len(SETUPS) :] + SETUPS[: repeat % len(SETUPS)]
            console.print(f"repeat {repeat + 1}/{repeats}: {', '.join(names)}")
            for index, name in enumerate(names):
                folder = Path(tmp) / f"{repeat}-{index}"
                folder.mkdir()
                samples[name].append(_in_fresh_process(name, job, folder))
    median = {name: statistics.median(values) for name, values in samples.items()}
    ratio, scaling = median[ONE] / median[PLAIN], median[TWO] / median[ONE]
    rows: list[dict[str, Any]] = [
        {
            "setup": name,
            "samples_per_s": median[name],
            "min": min(values),
            "max": max(values),
            "runs": values,
        }
        for name, values in samples.items()
    ]
    load_after = os.getloadavg()
    result: dict[str, Any] = {
        "scenario": "site",
        "dataset": dataset,
        "model": model,
        "batch_per_worker": batch_size,
        "steps": steps,
        "repeats": repeats,
        "cores": os.cpu_count(),
        "pin_cores": pin_cores,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "ratio_1_worker": ratio,
        "scaling_2_workers": scaling,
        "target_ratio_1_worker": TARGET_RATIO,
        "target_scaling_2_workers": TARGET_SCALING,
        "met": {
            "ratio_1_worker": ratio >= TARGET_RATIO,
            "scaling_2_workers": scaling >= TARGET_SCALING,
        },
        "rows": rows,
    }
    table = Table(title=f"site overhead: {model} on {dataset}, batch {batch_size}/worker")
    for column in ("setup", "samples/s (median)", "min", "max"):
        table.add_column(column, justify="right" if column != "setup" else "left")
    for row in rows:
        table.add_row(
            row["setup"], f"{row['samples_per_s']:.0f}", f"{row['min']:.0f}", f"{row['max']:.0f}"
        )
    console.print(table)
    console.print(
        f"ratio_1_worker {ratio:.3f} (target {TARGET_RATIO}), scaling_2_workers {scaling:.2f} "
        f"(target {TARGET_SCALING}); load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after, on {os.cpu_count()} cores"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, result)
    console.print(f"wrote {out}")
    return result


def measure(setup: str, job: SiteJob, folder: Path) -> float:
    """Samples/s of one setup, measured in this process."""
    if setup == PLAIN:
        train = load_dataset(job.dataset).train
        with _one_thread(job.pin_cores):
            train_single_process(job, train, _WARMUP_STEPS)
            return train_single_process(job, train, job.steps or 0).samples_per_s(job.batch_size)
    workers = {ONE: 1, TWO: 2}[setup]
    update = {"workers": workers, "shards": workers}
    summary = train_site(job.model_copy(update=update), folder / "site", overwrite=True)
    return float(summary["samples_per_s"])


def _in_fresh_process(setup: str, job: SiteJob, folder: Path) -> float:
    result = folder / "samples_per_s.json"
    command = [sys.executable, "-m", "atoll.bench.site_overhead", setup, str(folder)]
    (folder / "job.json").write_text(job.model_dump_json())
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not result.is_file():
        raise RuntimeError(f"{setup}: the measurement failed:\n{done.stderr[-4000:]}")
    return float(json.loads(result.read_text())["samples_per_s"])


if __name__ == "__main__":
    setup_name, run_folder = sys.argv[1], Path(sys.argv[2])
    site_job = SiteJob.model_validate_json((run_folder / "job.json").read_text())
    samples_per_s = measure(setup_name, site_job, run_folder)
    write_json(run_folder / "samples_per_s.json", {"samples_per_s": samples_per_s})
