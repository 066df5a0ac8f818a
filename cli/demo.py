"""`atoll demo`: the whole system on this machine, one ASP job followed live."""

import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from atoll.cli.control import FINAL, job_table
from atoll.platform.data.names import DatasetName
from atoll.platform.model.names import ModelName

if TYPE_CHECKING:
    from atoll.localstack.deployment import LocalDeployment
    from atoll.platform.control.client import ControlClient
    from atoll.platform.control.schemas import JobOut, Sample

# The three-continents topology's sites, and where their agents would run in a cloud.
REGIONS = {"virginia": "us-east-1", "frankfurt": "eu-central-1", "singapore": "ap-southeast-1"}


def demo(
    out: Annotated[Path, typer.Option(help="Where the demo leaves its record.")] = Path(
        "runs/demo"
    ),
    dataset: Annotated[DatasetName, typer.Option(help="Training data.")] = "fashion-mnist",
    model: Annotated[ModelName, typer.Option(help="Model from the zoo.")] = "mlp",
    partition: Annotated[
        str, typer.Option(help="How the training set splits: iid, label-skew:C, dirichlet:A.")
    ] = "dirichlet:0.5",
    clocks: Annotated[int, typer.Option(min=1, help="Site iterations to run.")] = 200,
    batch_size: Annotated[int, typer.Option(min=1, help="Batch per worker.")] = 64,
    threshold: Annotated[
        float, typer.Option(min=0, help="asp: significance threshold (0.05 = 5%).")
    ] = 0.05,
    seed: Annotated[int, typer.Option(help="Seed of the model, the data split and order.")] = 0,
    keep: Annotated[
        bool,
        typer.Option(
            help="Keep everything running after the job, until Ctrl-C: look around "
            "in the dashboard."
        ),
    ] = False,
    cartel: Annotated[
        bool,
        typer.Option(
            "--cartel",
            help="Run a cartel job instead: each site its own model on its own stream of "
            "digits; Frankfurt's drifts and it fetches from a neighbour (the options above "
            "are the geo job's).",
        ),
    ] = False,
) -> None:
    """Everything on this machine: Redis, the registry, the control plane and three edge
    agents joined by emulated WAN links (Virginia, Frankfurt, Singapore); one ASP job on
    non-IID data, followed live; then accuracy per site and WAN bytes against BSP.

    With --cartel: one cartel job (per-site models that help each other on drift); then
    where the drifting site fetched from, and how fast it recovered."""
    from atoll.cli.demo_cartel import run_cartel_demo
    from atoll.localstack.deployment import AgentSpec, LocalDeployment
    from atoll.platform.control.client import ControlClient
    from atoll.platform.control.report import job_record, plot_job
    from atoll.platform.core.files import write_json
    from atoll.platform.core.rundir import claim_run_dir
    from atoll.platform.data.datasets import check_dataset
    from atoll.platform.geo.job import GeoJob
    from atoll.platform.geo.spec import GeoSpec
    from atoll.platform.net.topology import load_topology

    check_dataset("digits" if cartel else dataset)  # a missing dataset fails here, first
    # Ctrl-C stops everything the demo started, even where it was started with SIGINT
    # ignored (a non-interactive shell's background job): its processes inherit that, and
    # a demo that cannot be stopped leaves agents training behind.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    claim_run_dir(out, overwrite=True)
    console = Console(stderr=True)
    names = load_topology("three-continents").sites
    deployment = LocalDeployment(
        out / "deployment",
        [AgentSpec(name, REGIONS.get(name, "local")) for name in names],
        redis_url=os.environ.get("ATOLL_REDIS_URL") or None,
    )
    spec = GeoJob(
        dataset=dataset,
        model=model,
        topology="three-continents",
        partition=partition,
        batch_size=batch_size,
        geo=GeoSpec(policy="asp", threshold=threshold),
        clocks=clocks,
        eval_every=max(1, clocks // 10),
        eval_samples=1000,
        seed=seed,
    )
    started = time.monotonic()
    interrupted = finished = False
    try:
        with console.status(
            "starting Redis, the registry, the control plane, the dashboard, 3 edge agents"
        ):
            deployment.start()
        # First, each on a line of its own: where to look, and how to log in.
        print(f"dashboard: {deployment.web_url}", flush=True)
        print(f"admin token: {deployment.admin_token}", flush=True)
        console.print(
            f"control plane: [bold]{deployment.control_url}[/] (API at /docs, live events at "
            f"/v1/events); try `ATOLL_CONTROL_URL={deployment.control_url} atoll control sites`"
        )
        if cartel:
            job = run_cartel_demo(deployment, out, seed, console)
        else:
            with ControlClient(deployment.control_url, deployment.admin_token) as client:
                job = client.submit(spec.model_dump(mode="json"), name="demo")
                job = follow(client, job, deployment.control_url, started, console)
                samples = _history(client, job.id)
            wall_s = time.monotonic() - started
            record = job_record(job, wall_s)
            plots = plot_job(job, samples, out)
            write_json(out / "summary.json", {**record, "plots": [str(p) for p in plots]})
            Console().print(_results(job, wall_s, plots))
        finished = True
        if keep:
            console.print(
                f"everything keeps running: the dashboard at {deployment.web_url} (a read-only "
                f"login: {deployment.viewer_token}); Ctrl-C stops it all"
            )
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        if not finished:
            interrupted = True
            console.print("interrupted: stopping every process the demo started")
    finally:
        _stop(deployment, console)
    if interrupted:
        sys.exit(130)
    if job.state != "completed":
        raise typer.Exit(1)


def follow(
    client: "ControlClient", job: "JobOut", url: str, started: float, console: Console
) -> "JobOut":
    def view() -> Group:
        elapsed = time.monotonic() - started
        header = Text(f"control plane {url} | {elapsed:.0f} s", style="dim")
        return Group(header, job_table(job))

    with Live(view(), console=console, refresh_per_second=4) as live:
        while job.state not in FINAL:
            time.sleep(0.5)
            job = client.job(job.id)
            live.update(view())
    return job


def _history(client: "ControlClient", job_id: str) -> "list[Sample]":
    samples, after = [], 0
    while True:
        page = client.telemetry(job_id, after=after, limit=5000)
        samples += page.samples
        if not page.samples:
            return samples
        after = page.next_after


def _stop(deployment: "LocalDeployment", console: Console) -> None:
    """Stop everything; a second Ctrl-C skips the sites' last checkpoint, never the cleanup."""
    try:
        deployment.stop()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        services = [deployment.web, deployment.control, deployment.registry]
        for managed in [*deployment.agents.values(), *services]:
            if managed is not None:
                managed.kill_group()
        if deployment.redis is not None and deployment.redis.managed is not None:
            deployment.redis.managed.kill_group()
        console.print("stopped without waiting for the sites' checkpoints")


def _results(job: "JobOut", wall_s: float, plots: list[Path]) -> Table:
    spec = job.spec
    where = f" on {spec.topology}" if spec.kind == "geo" else ""
    table = Table(title=f"{spec.label}{where}: {job.state}")
    for column in ("site", "final accuracy", "WAN MB sent", "stall s", "restarts"):
        table.add_column(column, justify="left" if column == "site" else "right")
    for s in job.sites:
        accuracy = "-" if s.final_accuracy is None else f"{s.final_accuracy:.4f}"
        table.add_row(
            s.site, accuracy, f"{s.wan_bytes / 1e6:.1f}", f"{s.stall_s:.1f}", str(s.restarts)
        )
    bsp = job.bsp_wan_bytes
    share = (
        f" = {job.wan_bytes / bsp:.0%} of what BSP would send ({bsp / 1e6:.1f} MB)" if bsp else ""
    )
    table.caption = (
        f"WAN: {job.wan_bytes / 1e6:.1f} MB{share} | {wall_s:.0f} s | "
        f"plots: {', '.join(str(p) for p in plots)}"
    )
    return table
