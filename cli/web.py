"""`atoll web`: serve the dashboard."""

import typer

from atoll.cli import service
from atoll.platform.core.errors import AtollError

app = typer.Typer(
    help="The web dashboard: sites, jobs, the map and the registry in a browser.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
DEFAULT_PORT = 8900


@app.command("serve")
def serve(
    host: service.Host = "127.0.0.1",
    port: service.Port = DEFAULT_PORT,
    log_level: service.Level = service.LogLevel.info,
    access_log: service.AccessLog = True,
) -> None:
    """Run the dashboard. It calls the control plane (ATOLL_CONTROL_URL) and the registry
    (ATOLL_REGISTRY_URL) with the admin token (ATOLL_ADMIN_TOKEN); people log in with that
    token or a read-only one (ATOLL_VIEWER_TOKEN); ATOLL_WEB_SECRET signs their sessions."""
    from atoll.platform.service.server import serve_app
    from atoll.web.core.config import web_settings

    problem = web_settings().startup_problem()
    if problem:
        raise AtollError(problem)
    serve_app(
        "atoll.web.main:create_app", host=host, port=port, log_level=log_level.value,
        access_log=access_log,
    )  # fmt: skip
