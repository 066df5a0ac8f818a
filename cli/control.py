"""`atoll control`: serve the control plane; submit, follow and cancel jobs; manage sites."""

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table

from atoll.cli import options as o
from atoll.cli import service
from atoll.cli.jobfile import resolve_submission

if TYPE_CHECKING:
    from atoll.platform.control.client import ControlClient
    from atoll.platform.control.schemas import JobOut

app = typer.Typer(
    help="The control plane: serve it, migrate its database; submit, follow and cancel jobs; "
    "drain, activate and remove sites.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
CONTROL = service.Service(
    database="the control plane's database",
    app="atoll.platform.control.main:create_app",
    settings="atoll.platform.control.core.config:control_settings",
    schema="atoll.platform.control.migrate:SCHEMA",
)
UrlOption = Annotated[
    str | None, typer.Option("--url", help="Control plane URL [env: ATOLL_CONTROL_URL].")
]
TokenOption = Annotated[
    str | None, typer.Option("--token", help="Admin token [env: ATOLL_ADMIN_TOKEN].")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
JobArgument = Annotated[str, typer.Argument(help="The job's id.")]
SiteArgument = Annotated[str, typer.Argument(help="The site's name.")]
FINAL = ("completed", "failed", "cancelled")
JOB_COLUMNS = ("site", "state", "online", "clock", "accuracy", "MB sent", "stall s", "restarts")


def _client(url: str | None, token: str | None) -> "ControlClient":
    from atoll.platform.control.client import ControlClient

    return ControlClient.from_env(url, token)


@app.command("serve")
def serve(
    host: service.Host = "127.0.0.1",
    port: service.Port = 8800,
    migrate: service.Migrate = False,
    log_level: service.Level = service.LogLevel.info,
    access_log: service.AccessLog = True,
) -> None:
    """Run the control plane, in one process: its dispatcher is the single writer of job
    states. Database from ATOLL_DATABASE_URL (default: a SQLite file under ATOLL_STATE_DIR);
    Redis from ATOLL_REDIS_URL; admin tokens from ATOLL_ADMIN_TOKEN."""
    service.serve(CONTROL, host, port, migrate, log_level, access_log)


service.add_migrate_command(app, CONTROL)


@app.command("submit")
@o.with_job_options()
def submit(
    job: Annotated[
        Path,
        typer.Option(
            "--job",
            help="A job spec file (YAML or JSON; examples/jobs/). The options below override it.",
            rich_help_panel=o.JOB_PANEL,
        ),
    ],
    name: Annotated[str | None, typer.Option(help="A name for people.")] = None,
    watch: Annotated[bool, typer.Option(help="Follow it until it ends.")] = False,
    url: UrlOption = None,
    token: TokenOption = None,
    job_options: dict[str, Any] | None = None,
) -> None:
    """Submit a job; prints its id (and with --watch, its progress until it ends)."""
    spec = resolve_submission(job, o.overrides(job_options or {}))
    with _client(url, token) as client:
        created = client.submit(spec.model_dump(mode="json"), name=name)
        print(created.id)
        if watch:
            _watch(client, created.id)


@app.command("jobs")
def jobs(
    state: Annotated[str | None, typer.Option(help="Only jobs in this state.")] = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Jobs, newest first."""
    with _client(url, token) as client:
        page = client.jobs(state)
    if as_json:
        print(page.model_dump_json())
        return
    table = Table(title=f"{len(page.jobs)} job(s)")
    for column in ("id", "name", "state", "sites", "clock", "accuracy", "submitted"):
        table.add_column(column)
    for job in page.jobs:
        clocks = [s.clock for s in job.sites]
        accuracies = [s.final_accuracy or s.accuracy for s in job.sites]
        known = [a for a in accuracies if a is not None]
        table.add_row(
            job.id,
            job.name,
            job.state,
            ", ".join(s.site for s in job.sites),
            f"{min(clocks, default=0)}/{job.spec.clocks}",
            f"{sum(known) / len(known):.3f}" if known else "-",
            job.submitted_at.isoformat(timespec="seconds"),
        )
    Console().print(table)


@app.command("job")
def job(
    job_id: JobArgument,
    as_json: JsonOption = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """A job, with every site's progress."""
    with _client(url, token) as client:
        found = client.job(job_id)
    if as_json:
        print(found.model_dump_json(indent=2))
        return
    Console().print(job_table(found))


@app.command("watch")
def watch(job_id: JobArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Follow a job's progress per site until it ends."""
    with _client(url, token) as client:
        _watch(client, job_id)


@app.command("cancel")
def cancel(job_id: JobArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Cancel a job: its sites stop at their next clock, with a checkpoint."""
    with _client(url, token) as client:
        found = client.cancel(job_id)
    print(f"{found.id}: {found.state}")


@app.command("sites")
def sites(as_json: JsonOption = False, url: UrlOption = None, token: TokenOption = None) -> None:
    """Every site an agent has joined as: state, liveness, its job."""
    with _client(url, token) as client:
        found = client.sites()
    if as_json:
        print(found.model_dump_json())
        return
    table = Table(title=f"{len(found.sites)} site(s)")
    for column in ("name", "state", "online", "agent", "region", "geo endpoint", "job"):
        table.add_column(column)
    for s in found.sites:
        table.add_row(
            s.name,
            s.state,
            "yes" if s.online else "no",
            s.agent_state or "-",
            s.region or "-",
            s.geo_endpoint or "-",
            s.job or "-",
        )
    Console().print(table)


@app.command("drain")
def drain(site: SiteArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Stop a site's job at its next clock (with a checkpoint) and give it no new job."""
    with _client(url, token) as client:
        print(f"{site}: {client.drain(site).state}")


@app.command("activate")
def activate(site: SiteArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Let a drained or removed site take jobs again; it resumes the job it stopped."""
    with _client(url, token) as client:
        print(f"{site}: {client.activate(site).state}")


@app.command("remove")
def remove(site: SiteArgument, url: UrlOption = None, token: TokenOption = None) -> None:
    """Remove a site: drained, and left out until activated again."""
    with _client(url, token) as client:
        print(f"{site}: {client.remove(site).state}")


def job_table(job: "JobOut", title: str | None = None) -> Table:
    """A job's sites: state, clock, accuracy, WAN bytes, stall, restarts. It fits an
    80-column terminal: no outer edge, no rules between columns, headers never cut."""
    table = Table(
        title=title or f"{job.name} ({job.id}): {job.state}",
        caption=job.message or None,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
    for column in JOB_COLUMNS:
        table.add_column(
            column,
            justify="left" if column in ("site", "state") else "right",
            min_width=len(column),
            no_wrap=True,
        )
    for s in job.sites:
        accuracy = s.final_accuracy if s.final_accuracy is not None else s.accuracy
        table.add_row(
            s.site,
            s.state,
            "yes" if s.online else "no",
            f"{s.clock}/{s.total_clocks or job.spec.clocks}",
            "-" if accuracy is None else f"{accuracy:.3f}",
            f"{s.wan_bytes / 1e6:.1f}",
            f"{s.stall_s:.1f}",
            str(s.restarts),
        )
    return table


def _watch(client: "ControlClient", job_id: str) -> None:
    console = Console(stderr=True)
    found = client.job(job_id)
    with Live(job_table(found), console=console, refresh_per_second=2) as live:
        while found.state not in FINAL:
            time.sleep(1.0)
            found = client.job(job_id)
            live.update(job_table(found))
    print(json.dumps({"id": found.id, "state": found.state, "message": found.message}))
