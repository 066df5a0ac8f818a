from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Benchmark scenarios: print a table, write JSON.", no_args_is_help=True)


@app.command("site")
def site(
    steps: Annotated[int, typer.Option(min=1, help="Clocks per measurement.")] = 1000,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
    repeats: Annotated[int, typer.Option(min=1)] = 3,
    dataset: Annotated[str, typer.Option()] = "fashion-mnist",
    model: Annotated[str, typer.Option()] = "cnn",
    out: Annotated[Path, typer.Option()] = Path("bench/results/site_overhead.json"),
) -> None:
    """Site-tier overhead: 1- and 2-worker sites against a plain PyTorch loop."""
    from atoll.bench import site_overhead

    site_overhead.run(steps, batch_size, repeats, dataset, model, out)


@app.command("geo")
def geo(
    quick: Annotated[
        bool, typer.Option(help="Digits, three sites, 40 clocks: a minute, for CI.")
    ] = False,
    out: Annotated[Path, typer.Option(help="Folder for the JSON and plots.")] = Path(
        "bench/results/geo"
    ),
    jobs: Annotated[int, typer.Option(min=1, help="Simulations run in parallel.")] = 2,
    compute_profile: Annotated[
        str,
        typer.Option(help="measured (here, once, for every run), seconds per clock, or a .json"),
    ] = "measured",
    seeds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Seeds per policy; rows are their means, with a time to target only if "
            "every seed reached it.",
        ),
    ] = 1,
) -> None:
    """Geo tier: every policy against lan and bsp, in the simulator, per scenario."""
    from atoll.bench import geo as scenario

    scenario.run(quick, out, jobs, compute_profile, seeds=seeds)


@app.command("fidelity")
def fidelity(
    dataset: Annotated[str, typer.Option()] = "fashion-mnist",
    clocks: Annotated[int, typer.Option(min=10)] = 200,
    target: Annotated[float, typer.Option(min=0, max=1)] = 0.7,
    repeats: Annotated[int, typer.Option(min=1, help="Real and simulated runs each.")] = 3,
    out: Annotated[Path, typer.Option()] = Path("bench/results/fidelity"),
) -> None:
    """Simulator against the real runtime on three-continents: time to target and WAN bytes."""
    from atoll.bench import fidelity as scenario

    scenario.run(dataset, clocks, target, repeats, out)


@app.command("registry")
def registry(
    sites: Annotated[
        list[int] | None, typer.Option(help="Registered sites; repeatable. Default 1000 and 10000.")
    ] = None,
    backend: Annotated[
        list[str] | None, typer.Option(help="sqlite and/or postgresql; repeatable. Default both.")
    ] = None,
    postgres_url: Annotated[
        str, typer.Option(help="PostgreSQL to use; the benchmark works in a schema of its own.")
    ] = "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    writes: Annotated[int, typer.Option(min=1, help="Report writes measured per setup.")] = 5000,
    queries: Annotated[int, typer.Option(min=1, help="Neighbour queries per setup.")] = 1000,
    concurrency: Annotated[int, typer.Option(min=1, help="Connections writing at once.")] = 32,
    workers: Annotated[int, typer.Option(min=1, help="Registry server processes.")] = 1,
    out: Annotated[Path, typer.Option()] = Path("bench/results/registry.json"),
) -> None:
    """Registry: report writes and neighbour queries over loopback, SQLite and PostgreSQL."""
    from atoll.bench import registry as scenario

    scenario.run(
        sites or [1000, 10_000],
        backend or ["sqlite", "postgresql"],
        postgres_url,
        writes,
        queries,
        concurrency,
        workers,
        out,
    )


@app.command("web")
def web(
    sites: Annotated[int, typer.Option(min=1, help="Sites declared in the control plane.")] = 1000,
    jobs: Annotated[int, typer.Option(min=1, help="Jobs submitted.")] = 200,
    repeat: Annotated[int, typer.Option(min=5, help="Requests timed per page.")] = 40,
    events: Annotated[int, typer.Option(min=5, help="Telemetry events timed.")] = 40,
    out: Annotated[Path, typer.Option()] = Path("bench/results/web.json"),
) -> None:
    """The dashboard: p95 render time of its pages with many sites and jobs, and the time
    from a telemetry sample on the bus to the dashboard's event stream."""
    from atoll.bench import web as scenario

    scenario.run(sites, jobs, repeat, events, out)


@app.command("cartel")
def cartel(
    quick: Annotated[
        bool, typer.Option(help="Digits, one seed, two scenarios: a minute or two, for CI.")
    ] = False,
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per policy; rows are their means.")] = 3,
    dataset: Annotated[str, typer.Option()] = "fashion-mnist",
    model: Annotated[str, typer.Option(help="logreg or cnn.")] = "logreg",
    batches: Annotated[int, typer.Option(min=30, help="Batches per site.")] = 240,
    batch_size: Annotated[int, typer.Option(min=1)] = 10,
    out: Annotated[Path, typer.Option(help="Folder for cartel.json and cartel.png.")] = Path(
        "bench/results/cartel"
    ),
) -> None:
    """Cartel: time to adapt after drift, bytes and accuracy against isolated, centralized,
    fedavg and random-neighbour, per scenario, in the simulator."""
    from atoll.bench import cartel as scenario

    scenario.run(quick, out, seeds, dataset, model, batches, batch_size)
