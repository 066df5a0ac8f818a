"""`atoll cartel sim`: Cartel's collaborative transfer between per-site models, simulated."""

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Cartel: per-site models that help each other on drift.", no_args_is_help=True
)


@app.command("sim")
def sim(
    out: Annotated[Path, typer.Option(help="Folder for summary.json, log.jsonl and plots.")],
    sites: Annotated[int, typer.Option(min=2, help="Sites, each with its own stream.")] = 8,
    scenario: Annotated[
        str, typer.Option(help="class-emergence, prior-shift or recurring.")
    ] = "class-emergence",
    dataset: Annotated[str, typer.Option(help="fashion-mnist or digits.")] = "fashion-mnist",
    model: Annotated[str, typer.Option(help="logreg or cnn.")] = "logreg",
    policy: Annotated[
        str, typer.Option(help="cartel, random-neighbour, isolated, fedavg or centralized.")
    ] = "cartel",
    merge: Annotated[str, typer.Option(help="replace, average or sample-weighted.")] = (
        "sample-weighted"
    ),
    detector: Annotated[str, typer.Option(help="window, adwin or page-hinkley.")] = "window",
    batches: Annotated[int, typer.Option(min=30, help="Batches per site.")] = 240,
    batch_size: Annotated[int, typer.Option(min=1, help="Samples per batch.")] = 10,
    seed: Annotated[int, typer.Option()] = 0,
    data_dir: Annotated[Path | None, typer.Option(help="Where the dataset files are.")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace a run already in --out.")] = False,
) -> None:
    """Simulate a cartel in virtual time: real training, modelled network, every byte counted."""
    import json

    from pydantic import ValidationError

    from atoll.platform.core.errors import AtollError
    from atoll.platform.core.files import write_json
    from atoll.platform.core.rundir import claim_run_dir
    from atoll.platform.data.datasets import check_dataset, load_dataset
    from atoll.platform.transfer.config import CartelConfig
    from atoll.platform.transfer.plots import plot_run
    from atoll.platform.transfer.scenarios import SCENARIOS
    from atoll.platform.transfer.sim import POLICIES, SimSettings, run_simulation

    if scenario not in SCENARIOS:
        raise AtollError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")
    if policy not in POLICIES:
        raise AtollError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if model not in ("logreg", "cnn"):
        raise AtollError(f"cartel trains logreg or cnn, not {model!r}")
    try:
        config = CartelConfig(merge=merge, detector=detector)
    except ValidationError as e:
        raise AtollError(f"bad cartel option: {e.errors()[0]['msg']}") from None
    check_dataset(dataset, data_dir)
    claim_run_dir(out, overwrite)
    settings = SimSettings(
        scenario,
        model,
        policy,
        sites=sites,
        batches=batches,
        batch_size=batch_size,
        seed=seed,
        cartel=config,
    )
    data = load_dataset(dataset, data_dir)
    with (out / "log.jsonl").open("w", buffering=1) as log:

        def record(event: dict[str, object]) -> None:
            log.write(json.dumps(event) + "\n")

        result = run_simulation(settings, data, record)
    summary = {"dataset": dataset, **result.summary()}
    write_json(out / "summary.json", summary)
    plot = plot_run(result, out / "accuracy.png", f"{policy} on {scenario}, {dataset}, {model}")
    adapt = summary["adapt_batches"]
    print(
        f"{policy} on {scenario}: adapted in {adapt:.1f} batches (mean over drifts) | "
        f"final accuracy {summary['final_accuracy']:.4f} | {summary['bytes'] / 1e3:.1f} kB moved "
        f"| {len(summary['transfers'])} transfers | {plot}"
        if adapt is not None
        else f"{policy} on {scenario}: no drift | {plot}"
    )
