from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from atoll.cli import options as o
from atoll.platform.core.events import SimEvent, TimelinePoint
from atoll.platform.core.files import write_json
from atoll.platform.core.plots import plot_timelines
from atoll.platform.core.rundir import claim_run_dir
from atoll.platform.core.runlog import RunLog
from atoll.platform.geo.job import GeoJob
from atoll.platform.sim.simulator import GeoSimulation


def sim(
    out: o.Out,
    topology: o.Topology = "three-continents",
    sites: o.Sites = None,
    geo: o.Policy = o.PolicyName["asp"],
    dataset: o.Dataset = o.DatasetName["fashion-mnist"],
    data_dir: o.DataDir = None,
    partition: o.Partition = "dirichlet:0.5",
    model: o.Model = o.ModelName["cnn"],
    workers: o.Workers = 1,
    batch_size: o.BatchSize = 32,
    optimizer: o.Optimizer = o.OptimizerName.sgd,
    lr: o.LearningRate = None,
    momentum: o.Momentum = 0.9,
    weight_decay: o.WeightDecay = 0.0,
    lr_schedule: o.LrSchedule = o.Schedule.constant,
    threshold: o.Threshold = 0.01,
    threshold_schedule: o.ThresholdScheduleOpt = o.ThresholdSchedule.constant,
    budget_mbps: o.Budget = None,
    staleness: o.Staleness = 1,
    values: o.Values = o.ValueType.float16,
    lookahead: o.Lookahead = 0.0,
    period: o.Period = 10,
    clocks: o.Clocks = 300,
    target_accuracy: o.Target = None,
    stop_at_target: o.StopAtTarget = False,
    eval_every: o.EvalEvery = 10,
    eval_samples: o.EvalSamples = 2000,
    compute_profile: Annotated[
        str,
        typer.Option(
            help="Seconds of compute per clock: measured (here), measured/20 (a device 20x "
            "faster), a number of seconds, or a .json profile."
        ),
    ] = "measured",
    seed: o.Seed = 0,
    overwrite: o.Overwrite = False,
) -> None:
    """Simulate a geo job in virtual time: real training math, modelled compute and WAN."""
    job = GeoJob(
        dataset=dataset.value,
        data_dir=data_dir,
        model=model.value,
        topology=topology,
        sites=sites,
        partition=partition,
        workers=workers,
        batch_size=batch_size,
        optimizer=o.optimizer_spec(optimizer, lr, momentum, weight_decay, lr_schedule),
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
        clocks=clocks,
        target_accuracy=target_accuracy,
        stop_at_target=stop_at_target,
        eval_every=eval_every,
        eval_samples=eval_samples,
        seed=seed,
    )
    job.partition_spec()  # a bad partition or topology fails here, before anything is written
    job.topologies()
    claim_run_dir(out, overwrite)
    write_json(out / "config.json", job.model_dump(mode="json"))
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("[bold]simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        console=console,
    )
    task = progress.add_task("clocks", total=clocks, note="")
    with RunLog(out / "log.jsonl") as log, progress:

        def record(event: SimEvent) -> None:
            log.write(event)
            if isinstance(event, TimelinePoint):
                note = (
                    f"acc {event.mean_accuracy:.3f} | {event.wan_bytes / 1e6:.1f} MB | "
                    f"t={event.time_s:.1f} s virtual"
                )
                progress.update(task, completed=event.clock, note=note)

        summary = GeoSimulation(job, compute_profile, on_event=record).run()
    write_json(out / "summary.json", summary)
    plot = plot_timelines(
        {summary["policy"]: summary["timeline"]},
        out / "timeline.png",
        f"{summary['policy']} on {topology}, {partition}",
        "virtual time (s)",
        target_accuracy,
    )
    reached = (
        f"target {target_accuracy} at {summary['time_to_target_s']:.1f} s (clock "
        f"{summary['clocks_to_target']})"
        if summary["time_to_target_s"] is not None
        else "target not reached"
        if target_accuracy
        else "no target set"
    )
    print(
        f"{summary['policy']}: final accuracy {summary['final_accuracy']:.4f} "
        f"(min site {summary['min_site_accuracy']:.4f}) | {reached} | "
        f"{summary['wan_bytes'] / 1e6:.1f} MB over the WAN | "
        f"stall {summary['stall_s']:.1f} s/site | "
        f"{summary['virtual_time_s']:.1f} s virtual in {summary['wall_s']:.0f} s | {plot}"
    )
