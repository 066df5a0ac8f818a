import sys
from pathlib import Path
from typing import Annotated

import typer

from atoll.cli.train import EXIT_ON_SIGNAL
from atoll.platform.core.errors import AtollError

app = typer.Typer(help="One site of a job: what an edge agent runs.", no_args_is_help=True)


@app.command("run")
def run(
    job: Annotated[Path, typer.Option(help="The site's job file (JSON), as a launcher wrote it.")],
    out: Annotated[Path, typer.Option(help="The site's run folder.")],
    resume: Annotated[
        bool, typer.Option(help="Continue from the last checkpoint; rejoin.")
    ] = False,
) -> None:
    """Run one site until its job ends: train, sync with the other sites, checkpoint."""
    from atoll.platform.site.run import train_site
    from atoll.platform.site.spec import SiteJob

    if not job.is_file():
        raise AtollError(f"no job file {job}")
    summary = train_site(SiteJob.load(job), out, resume=resume)
    accuracy = summary["test_accuracy"]
    print(f"{out}: {summary['status']} at step {summary['steps']}, test accuracy {accuracy}")
    if summary["status"] == "stopped":
        sys.exit(EXIT_ON_SIGNAL.get(summary["stopped_by"] or "", 1))
