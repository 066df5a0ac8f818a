"""Site-tier overhead: samples/s of a 1-worker site against a plain PyTorch loop of the
same model and batch at the same thread count (1), and of a 2-worker site (2 x 1 thread)
against the 1-worker site (weak scaling: each worker keeps its batch).

Targets: `ratio_1_worker` >= 0.95; `scaling_2_workers` >= 1.8. What the machine itself
allows is measured too: two plain loops at once, each on a core of its own and with no
exchange between them (`machine_scaling`: their summed samples/s over one loop's). Two
processes that share nothing still share the memory bus, the last-level cache and the
host's other tenants; a site's weak scaling cannot beat that ceiling. BSP cannot reach it
either where the cores' speeds drift apart: each clock waits for the slower worker. The
same two loops, held at every moment to the slower one's pace (`lockstep_pace`, from
their step times), give the ceiling for a site whose exchange cost nothing
(`machine_lockstep_scaling`). The setups alternate
(the order rotates every repeat) and each figure is the median of the repeats, with
their spread: a shared VM's speed drifts over minutes. The load average before and after
is recorded, because on a busy machine these figures measure the neighbours too.

Every measurement runs in a fresh Python process (`python -m atoll.bench.site_overhead`),
so that no setup inherits the allocator, fork server or thread pools of the ones before
it: an earlier session saw sites measured in the bench's own process slow down repeat
after repeat while a site run alone kept up with the plain loop. Fresh processes did not
close the gap by themselves (0.84 in the run the README reports).
"""

import bisect
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from atoll.platform.core.files import write_json
from atoll.platform.core.host_memory import keep_freed_memory
from atoll.platform.data.datasets import load_dataset
from atoll.platform.site.reference import train_single_process
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

TARGET_RATIO = 0.95
TARGET_SCALING = 1.8
_WARMUP_STEPS = 20
PLAIN, ONE, TWO = "plain loop, 1 thread", "site, 1 worker x 1 thread", "site, 2 workers x 1 thread"
PAIR = "2 plain loops at once, 1 thread each"
SETUPS = [PLAIN, ONE, TWO, PAIR]
_READY_WAIT_S = 300.0  # for the other loop of a pair to load its data and warm up


@contextmanager
def _one_thread(pin: bool, core: int = 0) -> Iterator[None]:
    """The plain loop at the site's thread count, on the core rank `core` would be pinned to."""
    threads = torch.get_num_threads()
    cores = os.sched_getaffinity(0)
    torch.set_num_threads(1)
    if pin:
        os.sched_setaffinity(0, {sorted(cores)[core % len(cores)]})
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

    measured: dict[str, list[Measurement]] = {name: [] for name in SETUPS}
    with tempfile.TemporaryDirectory(prefix="atoll-bench-") as tmp:
        for repeat in range(repeats):
            names = SETUPS[repeat % len(SETUPS) :] + SETUPS[: repeat % len(SETUPS)]
            console.print(f"repeat {repeat + 1}/{repeats}: {', '.join(names)}")
            for index, name in enumerate(names):
                folder = Path(tmp) / f"{repeat}-{index}"
                folder.mkdir()
                measured[name].append(_in_fresh_process(name, job, folder))
    samples = {name: [m.samples_per_s for m in runs] for name, runs in measured.items()}
    median = {name: statistics.median(values) for name, values in samples.items()}
    ratio, scaling = median[ONE] / median[PLAIN], median[TWO] / median[ONE]
    machine_scaling = median[PAIR] / median[PLAIN]
    lockstep = statistics.median(m.lockstep_samples_per_s or 0.0 for m in measured[PAIR])
    machine_lockstep_scaling = lockstep / median[PLAIN]
    rows: list[dict[str, Any]] = [
        {
            "setup": name,
            "samples_per_s": median[name],
            "min": min(values),
            "max": max(values),
            "runs": values,
            "compute_ms_per_clock": statistics.median(m.compute_ms for m in measured[name]),
            "exchange_ms_per_clock": _median_or_none([m.exchange_ms for m in measured[name]]),
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
        "machine_scaling": machine_scaling,
        "machine_lockstep_scaling": machine_lockstep_scaling,
        "target_ratio_1_worker": TARGET_RATIO,
        "target_scaling_2_workers": TARGET_SCALING,
        "met": {
            "ratio_1_worker": ratio >= TARGET_RATIO,
            "scaling_2_workers": scaling >= TARGET_SCALING,
        },
        "rows": rows,
    }
    table = Table(
        title=f"site overhead: {model} on {dataset}, batch {batch_size}/worker",
        caption="ms/clock: a plain loop's whole step; a site's forward and backward on rank 0 "
        "(compute), then its exchange (optimizer step and waits for peers included)",
    )
    columns = ("setup", "samples/s (median)", "min", "max", "compute ms/clock", "exchange ms/clock")
    for column in columns:
        table.add_column(column, justify="right" if column != "setup" else "left")
    for row in rows:
        exchange = row["exchange_ms_per_clock"]
        table.add_row(
            row["setup"],
            f"{row['samples_per_s']:.0f}",
            f"{row['min']:.0f}",
            f"{row['max']:.0f}",
            f"{row['compute_ms_per_clock']:.1f}",
            "-" if exchange is None else f"{exchange:.1f}",
        )
    console.print(table)
    console.print(
        f"ratio_1_worker {ratio:.3f} (target {TARGET_RATIO}), scaling_2_workers {scaling:.2f} "
        f"(target {TARGET_SCALING}; two independent loops reach {machine_scaling:.2f}, "
        f"{machine_lockstep_scaling:.2f} held to the slower one's pace); "
        f"load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after, on {os.cpu_count()} cores"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, result)
    console.print(f"wrote {out}")
    return result


@dataclass(frozen=True)
class Measurement:
    samples_per_s: float
    compute_ms: float  # per clock: a plain loop's whole step, a site's forward and backward
    exchange_ms: float | None  # per clock, a site's (rank 0's): optimizer step and waits
    step_ends: list[float] | None = None  # a plain loop's, when it is one of a pair
    lockstep_samples_per_s: float | None = None  # a pair's: see lockstep_pace


def measure(setup: str, job: SiteJob, folder: Path, core: int = 0) -> Measurement:
    """One setup, measured in this process (for a pair: one of its loops, on `core`,
    timed once its partner is warmed up too)."""
    # The plain loops get the malloc thresholds the site's ranks set themselves: the figures
    # compare the site tier with a loop, not one allocator's luck with another's.
    keep_freed_memory()
    if setup in (PLAIN, PAIR):
        train = load_dataset(job.dataset).train
        with _one_thread(job.pin_cores, core):
            train_single_process(job, train, _WARMUP_STEPS)
            if setup == PAIR:
                _wait_for_partner(folder, core)
            timed = train_single_process(job, train, job.steps or 0)
        return Measurement(
            timed.samples_per_s(job.batch_size),
            1000 * timed.step_s,
            None,
            timed.step_ends if setup == PAIR else None,
        )
    workers = {ONE: 1, TWO: 2}[setup]
    update = {"workers": workers, "shards": workers}
    summary = train_site(job.model_copy(update=update), folder / "site", overwrite=True)
    clocks = summary["steps"]
    return Measurement(
        float(summary["samples_per_s"]),
        1000 * summary["compute_s"] / clocks,
        1000 * summary["exchange_s"] / clocks,
    )


def _wait_for_partner(folder: Path, core: int) -> None:
    """Both loops of a pair start timing together, so that they run side by side."""
    (folder / f"ready-{core}").touch()
    deadline = time.monotonic() + _READY_WAIT_S
    while len(list(folder.glob("ready-*"))) < 2:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the other loop of the pair in {folder} never got ready")
        time.sleep(0.01)


def _in_fresh_process(setup: str, job: SiteJob, folder: Path) -> Measurement:
    """One setup in fresh processes: one for a setup, two at once for a pair (their
    samples/s summed, their step times averaged)."""
    (folder / "job.json").write_text(job.model_dump_json())
    cores = [0, 1] if setup == PAIR else [0]
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "atoll.bench.site_overhead", setup, str(folder), str(core)],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        for core in cores
    ]
    errors = [run.communicate()[1] for run in runs]
    measured = []
    for run, core, error in zip(runs, cores, errors, strict=True):
        result = folder / f"measurement-{core}.json"
        if run.returncode != 0 or not result.is_file():
            raise RuntimeError(f"{setup}: the measurement failed:\n{error[-4000:]}")
        measured.append(Measurement(**json.loads(result.read_text())))
    if setup != PAIR:
        return measured[0]
    ends = [m.step_ends or [] for m in measured]
    return Measurement(
        sum(m.samples_per_s for m in measured),
        statistics.mean(m.compute_ms for m in measured),
        None,
        lockstep_samples_per_s=2 * job.batch_size * lockstep_pace(ends[0], ends[1]),
    )


def lockstep_pace(ends_a: Sequence[float], ends_b: Sequence[float]) -> float:
    """Steps per second of two loops made to move together, each moment at the slower one's
    pace, over the time both ran. `ends_*`: a loop's start, then the end of each step.

    Between two step ends a loop's pace is one step over that step's time; the pace of the
    pair is the lower of the two, as under BSP, where each clock waits for the slower
    worker. It ignores what waiting itself would change (the faster core idling), so it
    is an estimate of a ceiling, not a simulation.
    """
    start, stop = max(ends_a[0], ends_b[0]), min(ends_a[-1], ends_b[-1])
    if stop <= start:
        raise ValueError("the two loops never ran at the same time")
    edges = sorted({start, stop, *(t for t in (*ends_a, *ends_b) if start < t < stop)})
    steps = 0.0
    for left, right in itertools.pairwise(edges):
        middle = (left + right) / 2
        steps += (right - left) * min(_pace_at(ends_a, middle), _pace_at(ends_b, middle))
    return steps / (stop - start)


def _pace_at(ends: Sequence[float], t: float) -> float:
    """One step over the duration of the step running at time `t`."""
    i = bisect.bisect_right(ends, t)
    return 1.0 / (ends[i] - ends[i - 1])


def _median_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


if __name__ == "__main__":
    setup_name, run_folder, run_core = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    site_job = SiteJob.model_validate_json((run_folder / "job.json").read_text())
    measurement = measure(setup_name, site_job, run_folder, run_core)
    write_json(run_folder / f"measurement-{run_core}.json", asdict(measurement))
