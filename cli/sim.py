"""`atoll sim`: a geo job in virtual time, from the job file `atoll train` also runs."""

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from atoll.cli import options as o
from atoll.cli.jobfile import resolve_job
from atoll.platform.core.events import SimDiverged, SimEvent, TimelinePoint


@o.with_job_options()
def sim(
    out: o.Out,
    job: o.JobFile = None,
    compute_profile: Annotated[
        str,
        typer.Option(
            help="Seconds of compute per clock: measured (here), measured/20 (a device 20x "
            "faster), a number of seconds, or a .json profile.",
            rich_help_panel=o.RUN_PANEL,
        ),
    ] = "measured",
    overwrite: o.Overwrite = False,
    devices: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Devices per site: each site trains through its devices (the device app's "
            "ClientApp, in process), one device round per clock.",
            rich_help_panel=o.RUN_PANEL,
        ),
    ] = None,
    device_profile: Annotated[
        str,
        typer.Option(help="mobile or lan: devices' link and speed.", rich_help_panel=o.RUN_PANEL),
    ] = "mobile",
    device_app: Annotated[
        Path | None,
        typer.Option(
            help="The Flower app devices run (default: the example).", rich_help_panel=o.RUN_PANEL
        ),
    ] = None,
    device_samples: Annotated[
        int,
        typer.Option(
            min=0,
            help="Training images per device, at most (0: its whole share).",
            rich_help_panel=o.RUN_PANEL,
        ),
    ] = 0,
    job_options: dict[str, Any] | None = None,
) -> None:
    """Simulate a geo job in virtual time: real training math, modelled compute and WAN."""
    spec = resolve_job(job, o.overrides(job_options or {}))
    if devices is not None:
        from atoll.cli.sim_devices import simulate_devices

        simulate_devices(spec, devices, device_profile, device_app, device_samples, out, overwrite)
        return
    from atoll.platform.core.files import write_json
    from atoll.platform.core.rundir import claim_run_dir
    from atoll.platform.core.runlog import RunLog
    from atoll.platform.sim.simulator import GeoSimulation

    spec.partition_spec()  # a bad partition or topology fails here, before anything is written
    spec.topologies()
    claim_run_dir(out, overwrite)
    write_json(out / "config.json", spec.model_dump(mode="json"))
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("[bold]simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        console=console,
    )
    task = progress.add_task("clocks", total=spec.clocks, note="")
    with RunLog(out / "log.jsonl") as log, progress:

        def record(event: SimEvent) -> None:
            log.write(event)
            if isinstance(event, TimelinePoint):
                note = (
                    f"acc {event.mean_accuracy:.3f} | {event.wan_bytes / 1e6:.1f} MB | "
                    f"t={event.time_s:.1f} s virtual"
                )
                progress.update(task, completed=event.clock, note=note)
            elif isinstance(event, SimDiverged):
                console.print(f"[red]diverged at {event.site}: {event.reason}; stopping")

        summary = GeoSimulation(spec, compute_profile, on_event=record).run()
    title = f"{summary['policy']} on {spec.topology}, {spec.partition}"
    plot = write_record(out, summary, title, "virtual time (s)", spec.target_accuracy)
    reached = (
        f"target {spec.target_accuracy} at {summary['time_to_target_s']:.1f} s (clock "
        f"{summary['clocks_to_target']})"
        if summary["time_to_target_s"] is not None
        else "target not reached"
        if spec.target_accuracy
        else "no target set"
    )
    if summary["diverged"]:
        print(f"DIVERGED: {summary['diverged']['site']}: {summary['diverged']['reason']}")
    print(
        f"{summary['policy']}: final accuracy {summary['final_accuracy']:.4f} "
        f"(min site {summary['min_site_accuracy']:.4f}) | {reached} | "
        f"{summary['wan_bytes'] / 1e6:.1f} MB over the WAN | "
        f"stall {summary['stall_s']:.1f} s/site | "
        f"{summary['virtual_time_s']:.1f} s virtual in {summary['wall_s']:.0f} s | {plot}"
    )


def write_record(
    out: Path, summary: dict[str, Any], title: str, time_axis: str, target: float | None
) -> Path:
    """A geo job's summary.json, and its accuracy and bytes against time in timeline.png."""
    from atoll.platform.core.files import write_json
    from atoll.platform.core.plots import plot_timelines

    write_json(out / "summary.json", summary)
    timelines = {summary["policy"]: summary["timeline"]}
    return plot_timelines(timelines, out / "timeline.png", title, time_axis, target)
