"""The `atoll` command. Importing it loads no torch: each command loads what it runs."""

import typer

from atoll.cli import (
    bench,
    ca,
    cartel,
    control,
    data,
    demo,
    devices,
    edge,
    registry,
    sim,
    site,
    sites,
    train,
    web,
)
from atoll.cli.errors import run

app = typer.Typer(
    name="atoll",
    help="Geo-distributed federated learning: train on data that stays at its sites.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("train")(train.train)
app.command("sim")(sim.sim)
app.command("demo")(demo.demo)
app.add_typer(cartel.app, name="cartel")
app.add_typer(data.app, name="data")
app.add_typer(bench.app, name="bench")
app.add_typer(registry.app, name="registry")
app.add_typer(sites.app, name="sites")
app.add_typer(ca.app, name="ca")
app.add_typer(site.app, name="site")
app.add_typer(control.app, name="control")
app.add_typer(edge.app, name="edge")
app.add_typer(devices.app, name="devices")
app.add_typer(web.app, name="web")


def main() -> None:
    run(app, "atoll")
