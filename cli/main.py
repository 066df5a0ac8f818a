import sys

import typer
from pydantic import ValidationError

from atoll.cli import bench, control, data, demo, edge, registry, sim, site, sites, train
from atoll.platform.core.errors import AtollError

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
app.add_typer(data.app, name="data")
app.add_typer(bench.app, name="bench")
app.add_typer(registry.app, name="registry")
app.add_typer(sites.app, name="sites")
app.add_typer(site.app, name="site")
app.add_typer(control.app, name="control")
app.add_typer(edge.app, name="edge")


def main() -> None:
    try:
        app()
    except AtollError as e:
        print(f"atoll: error: {e}", file=sys.stderr)
        sys.exit(2)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()
        )
        print(f"atoll: error: {problems}", file=sys.stderr)
        sys.exit(2)
