"""`atoll train`: one site (K workers, S shards, BSP), or a geo job of N site processes."""

import functools
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from atoll.cli import options as o
from atoll.cli.errors import problems
from atoll.cli.jobfile import resolve_job
from atoll.cli.sim import write_record
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
from atoll.platform.core.signals import stop_signals
from atoll.platform.geo.job import GeoJob
from atoll.platform.site.device import DeviceChoice
from atoll.platform.site.spec import SiteJob

EXIT_ON_SIGNAL = {"SIGINT": 130, "SIGTERM": 143}
GEO_RUN_PANEL = "Geo job only (--job, or --sites N > 1)"
SITE_PANEL = "One site only (no --job, --sites 1)"
# Job options that apply to a geo job only; `train` refuses them for one site.
GEO_ONLY = (
    "topology", "partition", "target_accuracy", "stop_at_target", "geo", "exchange", "density",
    "threshold",
    "threshold_schedule", "budget_mbps", "staleness", "sync_at_skew", "values", "lookahead",
    "period",
)  # fmt: skip


def _either(name: str, site_field: str = "", unset: str = "all", help: str = "") -> Any:
    """The job option `name` (its help unless given, its limits), for both modes: its
    default is SiteJob's `site_field` (else `name`) for one site, GeoJob's else (`unset`
    says what SiteJob's None means)."""
    option = o.JOB_OPTIONS[name]
    site_default = SiteJob.model_fields[site_field or name].default
    defaults = f"one site: {unset if site_default is None else site_default}; "
    defaults += f"geo: {o.spec_default(option.spec_field)}"
    return typer.Option(
        help=help or option.help,
        show_default=defaults,
        rich_help_panel=o.TRAINING_PANEL,
        **option.limits,
    )


def _mode_option(panel: str, help: str, shown_default: str, **limits: Any) -> Any:
    """An option of one mode only (`panel` says which); `train` refuses it in the other."""
    return typer.Option(help=help, show_default=shown_default, rich_help_panel=panel, **limits)


_geo_only = functools.partial(_mode_option, GEO_RUN_PANEL)
_site_only = functools.partial(_mode_option, SITE_PANEL)


@o.with_job_options(leave_out=("sites", "clocks", "batch_size", "eval_every", "eval_samples"))
def train(
    out: o.Out,
    job: o.JobFile = None,
    sites: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Sites: more than 1 runs a geo job, one process per site.",
            show_default="1, or the --job file's topology",
            rich_help_panel=o.JOB_PANEL,
        ),
    ] = None,
    steps: Annotated[
        int | None,
        _either("clocks", "steps", "--epochs", "Stop after this many clocks (geo: `clocks`)."),
    ] = None,
    batch_size: Annotated[int | None, _either("batch_size")] = None,
    eval_every: Annotated[int | None, _either("eval_every", unset="each epoch")] = None,
    eval_samples: Annotated[int | None, _either("eval_samples")] = None,
    comm_timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds a rank (geo: a site) waits on a peer before failing.",
            show_default="300.0",
            rich_help_panel=o.RUN_PANEL,
        ),
    ] = None,
    overwrite: o.Overwrite = False,
    tls: Annotated[bool | None, _geo_only("TLS on every link (throwaway job CA).", "no")] = None,
    site_restarts: Annotated[
        int | None, _geo_only("Times a dead site is restarted to rejoin.", "2", min=0)
    ] = None,
    epochs: Annotated[int | None, _site_only("Epochs over the site's data.", "1", min=1)] = None,
    dedicated_shards: Annotated[
        bool | None, _site_only("Run shards on server ranks of their own, not on workers.", "no")
    ] = None,
    threads: Annotated[
        int | None, _site_only("Torch threads per rank.", "shares the cores", min=1)
    ] = None,
    device: Annotated[
        DeviceChoice | None,
        _site_only("cpu, cuda (rank i on cuda:i), auto: cuda when present.", "auto"),
    ] = None,
    bf16: Annotated[
        bool | None, _site_only("Forward and loss under bfloat16 autocast.", "no")
    ] = None,
    checkpoint_every: Annotated[
        int | None, _site_only("Clocks between checkpoints.", "100", min=1)
    ] = None,
    resume: Annotated[
        bool | None, _site_only("Continue the run in --out from its last checkpoint.", "no")
    ] = None,
    job_options: dict[str, Any] | None = None,
) -> None:
    """Train one site (K workers, S shards, BSP), or a geo job over WAN links: with --job
    (the job file `atoll sim` and `atoll control submit` take) or --sites N."""
    site_only = {
        "epochs": epochs,
        "dedicated_shards": dedicated_shards,
        "threads": threads,
        "device": device,
        "bf16": bf16,
        "checkpoint_every": checkpoint_every,
        "resume": resume,
    }
    given = {
        **(job_options or {}),
        "clocks": steps,
        "batch_size": batch_size,
        "eval_every": eval_every,
        "eval_samples": eval_samples,
    }
    if job is not None or (sites or 1) > 1:
        _refuse(site_only, "applies to one site (no --job, --sites 1)")
        spec = resolve_job(job, o.overrides({**given, "sites": sites}))
        if len(spec.topologies()[0].sites) < 2:
            raise AtollError("a geo job needs at least 2 sites; without --job, train runs one")
        launch = {"tls": tls, "restarts": site_restarts, "sync_timeout_s": comm_timeout}
        run_geo(spec, out, overwrite, {k: v for k, v in launch.items() if v is not None})
        return
    geo_only = {name: given.get(name) for name in GEO_ONLY}
    _refuse(
        {**geo_only, "tls": tls, "site_restarts": site_restarts},
        "applies to a geo job (--job, or --sites N > 1)",
    )
    fields = {**o.overrides(given), **site_only, "comm_timeout_s": comm_timeout}
    del fields["resume"]
    run_site(_site_job(fields), out, resume=bool(resume), overwrite=overwrite)


def _refuse(options: dict[str, Any], why: str) -> None:
    given = [f"--{name.replace('_', '-')}" for name, value in options.items() if value is not None]
    if given:
        raise AtollError(f"{', '.join(given)} {why}")


def _site_job(fields: dict[str, Any]) -> SiteJob:
    """One site's job from the options given; the rest are SiteJob's defaults."""
    fields = {("steps" if k == "clocks" else k): v for k, v in fields.items() if v is not None}
    try:
        return SiteJob.model_validate(fields)
    except ValidationError as e:
        raise AtollError(problems(e)) from None


def run_site(job: SiteJob, out: Path, *, resume: bool, overwrite: bool) -> None:
    from atoll.platform.site.run import train_site

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


def run_geo(job: GeoJob, out: Path, overwrite: bool, launch_options: dict[str, Any]) -> None:
    from atoll.platform.core.files import write_json
    from atoll.platform.core.rundir import claim_run_dir
    from atoll.platform.site.launch import GeoLaunch

    job.partition_spec()  # fail on a bad partition before anything is written
    claim_run_dir(out, overwrite)
    write_json(out / "config.json", job.model_dump(mode="json"))
    console = Console(stderr=True)
    board = SiteBoard(job)
    launch = GeoLaunch(job, out, on_event=board.update, **launch_options)
    with (
        Live(board.render(), console=console, refresh_per_second=4) as live,
        stop_signals(launch.request_stop),
    ):
        board.live = live
        summary = launch.run()
    title = f"{summary['policy']} on {job.topology} (real runtime, loopback)"
    plot = write_record(out, summary, title, "wall time (s)", job.target_accuracy)
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
