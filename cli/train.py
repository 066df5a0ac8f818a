import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from atoll.cli import options as o
from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import (
    Evaluated,
    LaunchEvent,
    SiteDied,
    SiteEvent,
    SiteProgressed,
    StepDone,
    TrainingStarted,
)
from atoll.platform.core.files import write_json
from atoll.platform.core.plots import plot_timelines
from atoll.platform.core.rundir import claim_run_dir
from atoll.platform.geo.job import GeoJob
from atoll.platform.site.launch import GeoLaunch
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

EXIT_ON_SIGNAL = {"SIGINT": 130, "SIGTERM": 143}


def train(
    out: o.Out,
    dataset: o.Dataset = o.DatasetName["fashion-mnist"],
    data_dir: o.DataDir = None,
    model: o.Model = o.ModelName["cnn"],
    workers: o.Workers = 1,
    shards: o.Shards = 1,
    dedicated_shards: Annotated[
        bool, typer.Option(help="Run shards on server ranks of their own, not on workers.")
    ] = False,
    batch_size: o.BatchSize = 64,
    optimizer: o.Optimizer = o.OptimizerName.sgd,
    lr: o.LearningRate = None,
    momentum: o.Momentum = 0.9,
    weight_decay: o.WeightDecay = 0.0,
    lr_schedule: o.LrSchedule = o.Schedule.constant,
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    steps: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many clocks (geo: default 300).")
    ] = None,
    seed: o.Seed = 0,
    threads: Annotated[
        int | None, typer.Option(min=1, help="Torch threads per rank; default shares the cores.")
    ] = None,
    checkpoint_every: Annotated[int, typer.Option(min=1, help="Clocks between checkpoints.")] = 100,
    eval_every: Annotated[
        int | None,
        typer.Option(min=1, help="Clocks between test evaluations; default each epoch (geo: 10)."),
    ] = None,
    comm_timeout: Annotated[
        float, typer.Option(help="Seconds a rank waits on a peer before failing.")
    ] = 300.0,
    resume: Annotated[
        bool, typer.Option(help="Continue the run in --out from its last checkpoint.")
    ] = False,
    overwrite: o.Overwrite = False,
    sites: Annotated[
        int, typer.Option(min=1, help="Sites: more than 1 runs a geo job, one process per site.")
    ] = 1,
    topology: o.Topology = "three-continents",
    geo: o.Policy = o.PolicyName["asp"],
    partition: o.Partition = "dirichlet:0.5",
    threshold: o.Threshold = 0.01,
    threshold_schedule: o.ThresholdScheduleOpt = o.ThresholdSchedule.constant,
    budget_mbps: o.Budget = None,
    staleness: o.Staleness = 1,
    values: o.Values = o.ValueType.float16,
    lookahead: o.Lookahead = 0.0,
    period: o.Period = 10,
    target_accuracy: o.Target = None,
    eval_samples: o.EvalSamples = 2000,
    tls: Annotated[bool, typer.Option(help="Geo: TLS on every link (throwaway job CA).")] = False,
    site_restarts: Annotated[
        int, typer.Option(min=0, help="Geo: times a dead site is restarted to rejoin.")
    ] = 2,
) -> None:
    """Train one site (K workers, S shards, BSP), or with --sites N a geo job over WAN links."""
    optimizer_spec = o.optimizer_spec(optimizer, lr, momentum, weight_decay, lr_schedule)
    if sites > 1:
        if resume:
            raise AtollError("--resume applies to one site; a geo job restarts dead sites itself")
        job = GeoJob(
            dataset=dataset.value,
            data_dir=data_dir,
            model=model.value,
            topology=topology,
            sites=sites,
            partition=partition,
            workers=workers,
            shards=shards,
            batch_size=batch_size,
            optimizer=optimizer_spec,
            geo=o.geo_spec(
                geo,
                threshold=threshold,
                threshold_schedule=threshold_schedule,
                budget_mbps=budget_mbps,
                staleness=staleness,
                values=values,
                period=period,
                lookahead=lookahead,
            ),
            clocks=steps or 300,
            target_accuracy=target_accuracy,
            eval_every=eval_every or 10,
            eval_samples=eval_samples,
            seed=seed,
        )
        run_geo(job, out, overwrite, tls, site_restarts, comm_timeout)
        return
    job = SiteJob(
        dataset=dataset.value,
        data_dir=data_dir,
        model=model.value,
        workers=workers,
        shards=shards,
        dedicated_shards=dedicated_shards,
        batch_size=batch_size,
        optimizer=optimizer_spec,
        epochs=epochs,
        steps=steps,
        seed=seed,
        threads=threads,
        checkpoint_every=checkpoint_every,
        eval_every=eval_every,
        comm_timeout_s=comm_timeout,
    )
    console = Console(stderr=True)
    with TrainingProgress(console) as progress:
        summary = train_site(job, out, resume=resume, overwrite=overwrite, on_event=progress.update)
    if summary["status"] == "stopped":
        console.print(
            f"stopped by {summary['stopped_by']} at step {summary['steps']}/"
            f"{summary['total_steps']}; checkpoint saved. Continue with the same command "
            "and --resume."
        )
        sys.exit(EXIT_ON_SIGNAL.get(summary["stopped_by"] or "", 1))
    print(
        f"test accuracy {summary['test_accuracy']:.4f} | "
        f"{summary['samples_per_s']:.0f} samples/s | "
        f"{summary['steps']} steps in {summary['wall_s']:.1f} s | {out / 'summary.json'}"
    )


def run_geo(
    job: GeoJob, out: Path, overwrite: bool, tls: bool, restarts: int, sync_timeout_s: float
) -> None:
    job.partition_spec()  # fail on a bad partition before anything is written
    job.topologies()
    claim_run_dir(out, overwrite)
    write_json(out / "config.json", job.model_dump(mode="json"))
    console = Console(stderr=True)
    board = SiteBoard(job)
    launch = GeoLaunch(
        job, out, tls=tls, restarts=restarts, sync_timeout_s=sync_timeout_s, on_event=board.update
    )
    with (
        Live(board.render(), console=console, refresh_per_second=4) as live,
        _stop_on_signals(launch),
    ):
        board.live = live
        summary = launch.run()
    write_json(out / "summary.json", summary)
    plot = plot_timelines(
        {summary["policy"]: summary["timeline"]},
        out / "timeline.png",
        f"{summary['policy']} on {job.topology} (real runtime, loopback)",
        "wall time (s)",
        job.target_accuracy,
    )
    for failure in summary["failures"]:
        console.print(f"[red]site failed:[/red] {failure}")
    final = summary["final_accuracy"]
    print(
        f"{summary['policy']}: {summary['status']} | final accuracy "
        f"{final if final is None else round(final, 4)} | "
        f"{summary['wan_bytes'] / 1e6:.1f} MB over the WAN | stall {summary['stall_s']:.1f} s/site "
        f"| {summary['wall_s']:.0f} s | {out / 'summary.json'} | {plot}"
    )
    if summary["status"] != "completed":
        sys.exit(1)


@contextmanager
def _stop_on_signals(launch: GeoLaunch) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum: int, frame: object) -> None:
        launch.request_stop(signal.Signals(signum).name)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class SiteBoard:
    """Live progress of every site of a geo job: clock, accuracy, bytes sent, stall."""

    def __init__(self, job: GeoJob) -> None:
        self.job = job
        self.rows: dict[str, SiteProgressed] = {}
        self.notes: list[str] = []
        self.live: Live | None = None

    def update(self, event: LaunchEvent) -> None:
        if isinstance(event, SiteProgressed):
            self.rows[event.site] = event
        elif isinstance(event, SiteDied):
            then = "restarting to rejoin" if event.restarting else "not restarting"
            self.notes.append(f"{event.site} {event.how}; {then}")
        if self.live is not None:
            self.live.update(self.render())

    def render(self) -> Table:
        table = Table(
            title=f"{self.job.geo.label} on {self.job.topology}", caption="; ".join(self.notes[-3:])
        )
        for column in ("site", "clock", "accuracy", "MB sent", "stall s"):
            table.add_column(column, justify="left" if column == "site" else "right")
        for name, row in sorted(self.rows.items()):
            accuracy = "" if row.accuracy is None else f"{row.accuracy:.3f}"
            table.add_row(
                name,
                f"{row.clock}/{self.job.clocks}",
                accuracy,
                f"{row.wan_bytes / 1e6:.1f}",
                f"{row.stall_s:.1f}",
            )
        return table


class TrainingProgress:
    """A progress bar over clocks, fed by the site's events."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]:.3f}"),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self.task = self.progress.add_task("training", total=None, loss=float("nan"), note="")

    def __enter__(self) -> "TrainingProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress.live.is_started:
            self.progress.stop()

    def update(self, event: SiteEvent) -> None:
        if isinstance(event, TrainingStarted):
            # Shown once training starts, so a failed start prints only its error.
            self.progress.start()
            self.progress.update(
                self.task, description="training", total=event.total_steps, completed=event.step
            )
        elif isinstance(event, StepDone):
            self.progress.update(self.task, completed=event.step, loss=event.loss)
        elif isinstance(event, Evaluated):
            self.progress.update(self.task, note=f"test acc {event.test_accuracy:.3f}")
