"""The job options `atoll train`, `atoll sim` and `atoll control submit` share.

Each one overrides one field of the job spec (`GeoJob`, the `--job` file) and only when it
is given: every option defaults to None, and the defaults are the spec's, shown in the
help from the spec itself. Nothing here imports torch: these are read for `--help`.
"""

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel

from atoll.platform.data.names import DatasetName
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import Exchange, GeoSpec, PolicyName, ScheduleKind, ValueType
from atoll.platform.model.names import ModelName
from atoll.platform.model.optim import OptimizerName, OptimizerSpec

JOB_PANEL = "Job: data, model, sites (each overrides the --job file)"
TRAINING_PANEL = "Training (overrides the --job file)"
GEO_PANEL = "Geo policy (overrides the --job file's geo)"
RUN_PANEL = "Run"


@dataclass(frozen=True)
class JobOption:
    """A command-line option that sets one field of the job spec."""

    spec_field: str  # dotted into nested specs: "geo.threshold"
    kind: Any  # its values' type
    help: str
    panel: str
    limits: dict[str, Any] = field(default_factory=dict)  # typer's min and max


def _option(panel: str, spec_field: str, kind: Any, help: str, **limits: Any) -> JobOption:
    return JobOption(spec_field, kind, help, panel, limits)


_job = functools.partial(_option, JOB_PANEL)
_training = functools.partial(_option, TRAINING_PANEL)
_geo = functools.partial(_option, GEO_PANEL)

# Every job option, in the order `--help` lists them within their panels.
JOB_OPTIONS: dict[str, JobOption] = {
    "topology": _job("topology", str, "lan, three-continents, gaia-11, or a topology .yaml file."),
    "sites": _job("sites", int, "Use the topology's first N sites.", min=1),
    "dataset": _job("dataset", DatasetName, "Training data."),
    "data_dir": _job("data_dir", Path, "Folder holding the datasets (else $ATOLL_DATA_DIR)."),
    "partition": _job(
        "partition",
        str,
        "How the training set splits across sites: iid, label-skew:C, dirichlet:A.",
    ),
    "model": _job("model", ModelName, "Model from the zoo."),
    "workers": _job("workers", int, "Worker ranks per site (K).", min=1),
    "shards": _job("shards", int, "Parameter-server shards per site (S).", min=1),
    "seed": _job("seed", int, "Seed of the model, the data split and order."),
    "batch_size": _training("batch_size", int, "Batch per worker.", min=1),
    "optimizer": _training("optimizer.name", OptimizerName, "Optimizer."),
    "lr": _training("optimizer.lr", float, "Learning rate; default 0.05 (sgd), 0.001 (adam)."),
    "momentum": _training("optimizer.momentum", float, "SGD momentum, below 1.", min=0),
    "weight_decay": _training("optimizer.weight_decay", float, "Weight decay.", min=0),
    "lr_schedule": _training(
        "optimizer.schedule", Literal["constant", "cosine"], "Learning-rate schedule."
    ),
    "clocks": _training("clocks", int, "Site iterations to run.", min=1),
    "target_accuracy": _training(
        "target_accuracy", float, "Accuracy whose time of arrival is reported.", min=0, max=1
    ),
    "stop_at_target": _training(
        "stop_at_target", bool, "Stop once the target accuracy is reached."
    ),
    "eval_every": _training("eval_every", int, "Clocks between test evaluations.", min=1),
    "eval_samples": _training("eval_samples", int, "Test images per periodic evaluation.", min=1),
    "geo": _geo("geo.policy", PolicyName, "Geo policy between sites."),
    "threshold": _geo(
        "geo.threshold", float, "release asp: significance threshold (0.01 = 1%).", min=0
    ),
    "threshold_schedule": _geo(
        "geo.threshold_schedule", ScheduleKind, "asp: how the threshold decays."
    ),
    "exchange": _geo(
        "geo.exchange",
        Exchange,
        "asp: direct (each site's top residual steps to every site, each replica applying "
        "exactly what is sent), sharded (each site's top residual steps to each piece's "
        "owner, the owner's top aggregate to all), tracking (every site's estimated step "
        "applied every clock) or release (Gaia: significant accumulated updates, sent and zeroed).",
    ),
    "density": _geo(
        "geo.density",
        float,
        "asp (direct, sharded, tracking, capped release): most of its elements a site sends "
        "per clock (0.008 = 0.8%); the share sent follows the links' measured backlog up to this.",
        min=0,
        max=1,
    ),
    "budget_mbps": _geo(
        "geo.budget_mbps",
        float,
        "asp: adapt the threshold to keep each site's WAN egress near this.",
        min=0,
    ),
    "staleness": _geo("geo.staleness", int, "asp: mirror clock bound DS.", min=0),
    "sync_at_skew": _geo(
        "geo.sync_at_skew",
        float,
        "asp: run synchronously (DS=0) when the sites' label skew, measured at the start, is "
        "at least this (0: the same mix everywhere; 0.8: two classes of ten a site; 1: never).",
        min=0,
        max=1,
    ),
    "values": _geo("geo.value_type", ValueType, "asp: precision of the values sent."),
    "lookahead": _geo(
        "geo.lookahead",
        float,
        "asp: take gradients this share of the way to where the mirrors' undelivered "
        "steps will move the replica (0 = off; keeps the full momentum when on).",
        min=0,
        max=2,
    ),
    "period": _geo("geo.period", int, "fedavg, diloco: local clocks per round.", min=1),
}


def spec_default(path: str, model: type[BaseModel] = GeoJob) -> str:
    """The spec's default for a dotted field, as `--help` shows it."""
    head, _, rest = path.partition(".")
    field = model.model_fields[head]
    if rest:
        nested: dict[str, type[BaseModel]] = {"optimizer": OptimizerSpec, "geo": GeoSpec}
        return spec_default(rest, nested[head])
    return "none" if field.default is None else str(field.default)


def overrides(given: dict[str, Any]) -> dict[str, Any]:
    """The options given (not None), nested as the spec's fields: {"geo": {"threshold": ..}}."""
    nested: dict[str, Any] = {}
    for name, value in given.items():
        if value is None or name not in JOB_OPTIONS:
            continue
        *parents, leaf = JOB_OPTIONS[name].spec_field.split(".")
        target = nested
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = value.value if isinstance(value, Enum) else value
    return nested


JobFile = Annotated[
    Path | None,
    typer.Option(
        "--job",
        help="A job spec file (YAML or JSON; examples/jobs/). The options below override it.",
        rich_help_panel=JOB_PANEL,
    ),
]
Out = Annotated[
    Path,
    typer.Option(
        help="Run folder: config, log.jsonl, summary.json, ...", rich_help_panel=RUN_PANEL
    ),
]
Overwrite = Annotated[
    bool, typer.Option(help="Replace an earlier run in --out.", rich_help_panel=RUN_PANEL)
]


def _parameter(name: str, option: JobOption) -> inspect.Parameter:
    """The option as a command parameter: None unless given, the spec's default shown."""
    flag = typer.Option(
        None,
        help=option.help,
        show_default=spec_default(option.spec_field),
        rich_help_panel=option.panel,
        **option.limits,
    )
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=flag, annotation=option.kind | None
    )


Command = Callable[..., None]


def with_job_options(*, leave_out: tuple[str, ...] = ()) -> Callable[[Command], Command]:
    """Give a command the job options (but `leave_out`, which it declares itself).

    The command declares a parameter `job_options` and receives in it the options the
    user gave (name -> value); one list of options for every command that takes a job.
    """

    def decorate(command: Command) -> Command:
        own = inspect.signature(command)
        names = [name for name in JOB_OPTIONS if name not in leave_out]
        kept = [p for p in own.parameters.values() if p.name != "job_options"]
        parameters = [*kept, *(_parameter(name, JOB_OPTIONS[name]) for name in names)]

        @functools.wraps(command)
        def run(**kwargs: Any) -> None:
            given = {name: kwargs.pop(name) for name in names}
            command(**kwargs, job_options={k: v for k, v in given.items() if v is not None})

        run.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
        return run

    return decorate
