from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Benchmark scenarios: print a table, write JSON.", no_args_is_help=True)


@app.command("site")
def site(
    steps: Annotated[int, typer.Option(min=1, help="Clocks per measurement.")] = 300,
    batch_size: Annotated[int, typer.Option(min=1)] = 64,
    repeats: Annotated[int, typer.Option(min=5, help="Medians of this many (>= 5).")] = 5,
    dataset: Annotated[str, typer.Option()] = "fashion-mnist",
    model: Annotated[str, typer.Option()] = "cnn",
    pin_cores: Annotated[
        bool, typer.Option(help="Pin each rank (and the plain loop) to a core of its own.")
    ] = True,
    out: Annotated[Path, typer.Option()] = Path("bench/results/site.json"),
) -> None:
    """Site-tier overhead: a 1-worker site against a plain PyTorch loop at 1 thread
    (`ratio_1_worker`), 2 workers x 1 thread against 1 (`scaling_2_workers`), and two
    independent plain loops at once against one (`machine_scaling`, the machine's ceiling;
    `machine_lockstep_scaling`, the same loops held to the slower one's pace, BSP's)."""
    from atoll.bench import site_overhead

    site_overhead.run(steps, batch_size, repeats, dataset, model, pin_cores, out)


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
        str | None,
        typer.Option(
            help="measured (here, once, for every run), seconds per clock, or a .json; "
            "default: the plan's (0.05 s per clock for bar and ablation)"
        ),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            min=1,
            help="Seeds per policy; rows are their means, with a time to target only if "
            "every seed reached it.",
        ),
    ] = 1,
    plan: Annotated[
        str,
        typer.Option(
            help="bar: gaia-11, Dirichlet(0.5) and IID, judged against issue 17's bar; "
            "ablation: {dense, filtered} x {no delay, gaia-11 delay}"
        ),
    ] = "bar",
    only: Annotated[
        list[str] | None,
        typer.Option(help="Run only the policies whose label contains this (and lan, bsp)."),
    ] = None,
    clocks: Annotated[int | None, typer.Option(min=1, help="Clocks per run (screening).")] = None,
    small: Annotated[
        bool,
        typer.Option(
            help="Digits (53 k parameters) instead of Fashion-MNIST: the same "
            "scenarios for a machine that cannot run the full plan."
        ),
    ] = False,
) -> None:
    """Geo tier: every policy against lan and bsp, in the simulator, per scenario."""
    from atoll.bench import geo as scenario

    if plan not in scenario.PLANS:
        raise typer.BadParameter(f"no plan {plan!r}; choose from {', '.join(scenario.PLANS)}")
    scenario.run(
        quick, out, jobs, compute_profile, seeds=seeds, plan_name=None if quick else plan,
        only=tuple(only or ()), clocks=clocks, small=small,
    )  # fmt: skip


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


@app.command("devices")
def devices(
    quick: Annotated[
        bool, typer.Option(help="Fewer rounds, fewer images per device: a few minutes, for CI.")
    ] = False,
    devices: Annotated[int, typer.Option(min=1, help="Devices per region.")] = 10,
    rounds: Annotated[
        int | None, typer.Option(min=1, help="Device rounds (default 6 quick, 15 full).")
    ] = None,
    target: Annotated[float, typer.Option(min=0, max=1, help="Target accuracy.")] = 0.6,
    out: Annotated[Path, typer.Option()] = Path("bench/results/devices"),
) -> None:
    """Device tier: atoll's per-region sites against one central Flower server (simulator)."""
    from atoll.bench import devices as scenario

    scenario.run(quick, devices, rounds, target, out)


@app.command("cartel")
def cartel(
    quick: Annotated[
        bool, typer.Option(help="Digits, one seed, two scenarios: a minute or two, for CI.")
    ] = False,
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per policy; rows are their means.")] = 3,
    dataset: Annotated[str, typer.Option()] = "fashion-mnist",
    model: Annotated[str, typer.Option(help="logreg or cnn.")] = "logreg",
    batches: Annotated[
        int, typer.Option(min=30, help="Batches per site (drift at a third of them).")
    ] = 360,
    batch_size: Annotated[int, typer.Option(min=1)] = 10,
    out: Annotated[Path, typer.Option(help="Folder for cartel.json and cartel.png.")] = Path(
        "bench/results/cartel"
    ),
) -> None:
    """Cartel: time to adapt after drift, bytes and accuracy against isolated, centralized,
    fedavg and random-neighbour, per scenario, in the simulator."""
    from atoll.bench import cartel as scenario

    scenario.run(quick, out, seeds, dataset, model, batches, batch_size)
