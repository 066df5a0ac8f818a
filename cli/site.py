import sys
from pathlib import Path
from typing import Annotated

import typer

from atoll.cli.train import EXIT_ON_SIGNAL
from atoll.platform.core.errors import AtollError
from atoll.platform.site.device import DeviceChoice

app = typer.Typer(help="One site of a job: what an edge agent runs.", no_args_is_help=True)


@app.command("run")
def run(
    job: Annotated[Path, typer.Option(help="The site's job file (JSON), as a launcher wrote it.")],
    out: Annotated[
        Path, typer.Option(help="The site's run folder (under torchrun: one every node sees).")
    ],
    resume: Annotated[
        bool, typer.Option(help="Continue from the last checkpoint; rejoin.")
    ] = False,
    device: Annotated[
        DeviceChoice | None,
        typer.Option(help="cpu, cuda (rank on cuda:LOCAL_RANK), auto; else the job file's."),
    ] = None,
    bf16: Annotated[
        bool | None, typer.Option(help="bfloat16 autocast; else the job file's.")
    ] = None,
) -> None:
    """Run one site until its job ends: train, sync with the other sites, checkpoint.

    Started by torchrun, this process is one rank of a site spread over several machines
    (env:// rendezvous), on each node:

        torchrun --nnodes N --nproc-per-node K --rdzv-backend c10d
          --rdzv-endpoint HOST:PORT -m atoll.cli site run --job J --out SHARED_DIR

    Otherwise it starts every rank of the site on this machine."""
    from atoll.platform.site.run import train_site
    from atoll.platform.site.spec import SiteJob
    from atoll.platform.site.torchrun import TorchrunRank, run_torchrun_rank

    if not job.is_file():
        raise AtollError(f"no job file {job}")
    if _kind(job) == "cartel":
        _run_cartel(job, out, resume)
        return
    hardware = {"device": device, "bf16": bf16}
    site_job = SiteJob.load(job).model_copy(
        update={k: v for k, v in hardware.items() if v is not None}
    )
    me = TorchrunRank.from_env()
    if me is None:
        summary = train_site(site_job, out, resume=resume)
    else:
        found = run_torchrun_rank(site_job, out, me, resume)
        if found is None:
            return  # not rank 0: rank 0 reports
        summary = found
    accuracy = summary["test_accuracy"]
    print(f"{out}: {summary['status']} at step {summary['steps']}, test accuracy {accuracy}")
    if summary["status"] == "stopped":
        sys.exit(EXIT_ON_SIGNAL.get(str(summary["stopped_by"] or ""), 1))


def _kind(job: Path) -> str:
    """A cartel site's job says so; a geo site's has no `kind`."""
    import json

    try:
        fields = json.loads(job.read_text())
    except json.JSONDecodeError as e:
        raise AtollError(f"{job} is not JSON: {e}") from None
    kind = fields.get("kind", "geo") if isinstance(fields, dict) else "geo"
    return str(kind)


def _run_cartel(job: Path, out: Path, resume: bool) -> None:
    """A cartel site: its own model on its own stream, helped by its neighbours on drift.
    With `resume`, it goes on from its checkpoint in `out` (afresh when it has none)."""
    import logging

    from pydantic import ValidationError

    from atoll.cli.errors import problems
    from atoll.edge.cartel.site import CartelSiteRun
    from atoll.platform.core.signals import stop_signals
    from atoll.platform.data.datasets import check_dataset
    from atoll.platform.transfer.job import CartelSiteJob

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        site_job = CartelSiteJob.load(job)
    except ValidationError as e:
        raise AtollError(f"{job}: {problems(e)}") from None
    if site_job.job.data == "site":
        site_job.own_data()  # a site without data, or of another schema: one line, here
    else:
        check_dataset(site_job.job.dataset, site_job.data_dir or site_job.job.data_dir)
    run = CartelSiteRun(site_job, out)
    with stop_signals(run.request_stop):
        summary = run.run(resume)
    accuracy, transfers = summary["test_accuracy"], summary["transfers"]
    print(f"{out}: {summary['status']} at batch {summary['steps']}, accuracy {accuracy:.4f}, "
          f"{transfers} transfer(s)")  # fmt: skip
    if summary["status"] == "stopped":
        sys.exit(EXIT_ON_SIGNAL.get(str(summary["stopped_by"] or ""), 1))
