import logging
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="The edge agent: one per site; runs the site's part of each job.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,  # also run on its own, as `python -m atoll.edge`
)


@app.callback()
def edge() -> None:
    """The edge agent: one per site; runs the site's part of each job."""


@app.command("run")
def run(
    config: Annotated[
        Path,
        typer.Option(
            help="The site's configuration (site.yaml); ATOLL_* variables override it.",
            envvar="ATOLL_EDGE_CONFIG",
        ),
    ],
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Run the agent until SIGTERM: register, heartbeat, take jobs, run them, report.
    Redis from ATOLL_REDIS_URL; the registry from ATOLL_REGISTRY_URL with
    ATOLL_REGISTRY_TOKEN (or ATOLL_ADMIN_TOKEN, to register the site the first time)."""
    from atoll.edge.agent import EdgeAgent
    from atoll.edge.config import load_edge_settings

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = load_edge_settings(config)
    raise typer.Exit(EdgeAgent(settings).run())
