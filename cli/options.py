"""The job options `atoll train`, `atoll sim` and `atoll control submit` share.

Each one overrides one field of the job spec (`GeoJob`, the `--job` file) and only when it
is given: every option defaults to None, and the defaults are the spec's, shown in the
help from the spec itself. Nothing here imports torch: these are read for `--help`.
"""

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import BaseModel

from atoll.platform.data.names import DatasetName
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import GeoSpec, PolicyName, ScheduleKind, ValueType
from atoll.platform.model.names import ModelName
from atoll.platform.site.spec import OptimizerName, OptimizerSpec

JOB_PANEL = "Job: data, model, sites (each overrides the --job file)"
TRAINING_PANEL = "Training (overrides the --job file)"
GEO_PANEL = "Geo policy (overrides the --job file's geo)"
RUN_PANEL = "Run"

# Option name -> the spec field it sets, dotted into nested specs.
SPEC_FIELDS: dict[str, str] = {
    "dataset": "dataset",
    "data_dir": "data_dir",
    "model": "model",
    "topology": "topology",
    "sites": "sites",
    "partition": "partition",
    "workers": "workers",
    "shards": "shards",
    "batch_size": "batch_size",
    "optimizer": "optimizer.name",
    "lr": "optimizer.lr",
    "momentum": "optimizer.momentum",
    "weight_decay": "optimizer.weight_decay",
    "lr_schedule": "optimizer.schedule",
    "geo": "geo.policy",
    "threshold": "geo.threshold",
    "threshold_schedule": "geo.threshold_schedule",
    "budget_mbps": "geo.budget_mbps",
    "staleness": "geo.staleness",
    "values": "geo.value_type",
    "lookahead": "geo.lookahead",
    "period": "geo.period",
    "clocks": "clocks",
    "target_accuracy": "target_accuracy",
    "stop_at_target": "stop_at_target",
    "eval_every": "eval_every",
    "eval_samples": "eval_samples",
    "seed": "seed",
}


def spec_default(path: str, model: type[BaseModel] = GeoJob) -> str:
    """The spec's default for a dotted field, as `--help` shows it."""
    head, _, rest = path.partition(".")
    field = model.model_fields[head]
    if rest:
        nested: dict[str, type[BaseModel]] = {"optimizer": OptimizerSpec, "geo": GeoSpec}
        return spec_default(rest, nested[head])
    return "none" if field.default is None else str(field.default)


def _option(name: str, help: str, panel: str, **extra: Any) -> Any:
    """A job option: None unless given, the spec's default shown beside its help."""
    return typer.Option(
        help=help, show_default=spec_default(SPEC_FIELDS[name]), rich_help_panel=panel, **extra
    )


def overrides(given: dict[str, Any]) -> dict[str, Any]:
    """The options given (not None), nested as the spec's fields: {"geo": {"threshold": ..}}."""
    nested: dict[str, Any] = {}
    for name, value in given.items():
        if value is None or name not in SPEC_FIELDS:
            continue
        *parents, leaf = SPEC_FIELDS[name].split(".")
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

Dataset = Annotated[DatasetName | None, _option("dataset", "Training data.", JOB_PANEL)]
DataDir = Annotated[
    Path | None,
    _option("data_dir", "Folder holding the datasets (else $ATOLL_DATA_DIR).", JOB_PANEL),
]
Model = Annotated[ModelName | None, _option("model", "Model from the zoo.", JOB_PANEL)]
Topology = Annotated[
    str | None,
    _option("topology", "lan, three-continents, gaia-11, or a topology .yaml file.", JOB_PANEL),
]
Sites = Annotated[
    int | None, _option("sites", "Use the topology's first N sites.", JOB_PANEL, min=1)
]
Partition = Annotated[
    str | None,
    _option(
        "partition",
        "How the training set splits across sites: iid, label-skew:C, dirichlet:A.",
        JOB_PANEL,
    ),
]
Workers = Annotated[int | None, _option("workers", "Worker ranks per site (K).", JOB_PANEL, min=1)]
Shards = Annotated[
    int | None, _option("shards", "Parameter-server shards per site (S).", JOB_PANEL, min=1)
]
Seed = Annotated[
    int | None, _option("seed", "Seed of the model, the data split and order.", JOB_PANEL)
]

BatchSize = Annotated[int | None, _option("batch_size", "Batch per worker.", TRAINING_PANEL, min=1)]
Optimizer = Annotated[OptimizerName | None, _option("optimizer", "Optimizer.", TRAINING_PANEL)]
LearningRate = Annotated[
    float | None,
    _option("lr", "Learning rate; default 0.05 (sgd), 0.001 (adam).", TRAINING_PANEL),
]
Momentum = Annotated[
    float | None, _option("momentum", "SGD momentum, below 1.", TRAINING_PANEL, min=0)
]
WeightDecay = Annotated[
    float | None, _option("weight_decay", "Weight decay.", TRAINING_PANEL, min=0)
]
LrSchedule = Annotated[
    Literal["constant", "cosine"] | None,
    _option("lr_schedule", "Learning-rate schedule.", TRAINING_PANEL),
]
Clocks = Annotated[int | None, _option("clocks", "Site iterations to run.", TRAINING_PANEL, min=1)]
Target = Annotated[
    float | None,
    _option(
        "target_accuracy", "Accuracy whose time of arrival is reported.", TRAINING_PANEL, min=0
    ),
]
StopAtTarget = Annotated[
    bool | None,
    _option("stop_at_target", "Stop once the target accuracy is reached.", TRAINING_PANEL),
]
EvalEvery = Annotated[
    int | None, _option("eval_every", "Clocks between test evaluations.", TRAINING_PANEL, min=1)
]
EvalSamples = Annotated[
    int | None,
    _option("eval_samples", "Test images per periodic evaluation.", TRAINING_PANEL, min=1),
]

Policy = Annotated[
    PolicyName | None,
    typer.Option(
        "--geo",
        help="Geo policy between sites.",
        show_default=spec_default("geo.policy"),
        rich_help_panel=GEO_PANEL,
    ),
]
Threshold = Annotated[
    float | None,
    _option("threshold", "asp: significance threshold (0.01 = 1%).", GEO_PANEL, min=0),
]
ThresholdScheduleOpt = Annotated[
    ScheduleKind | None, _option("threshold_schedule", "asp: how the threshold decays.", GEO_PANEL)
]
Budget = Annotated[
    float | None,
    _option(
        "budget_mbps",
        "asp: adapt the threshold to keep each site's WAN egress near this.",
        GEO_PANEL,
        min=0,
    ),
]
Staleness = Annotated[
    int | None, _option("staleness", "asp: mirror clock bound DS.", GEO_PANEL, min=0)
]
Values = Annotated[
    ValueType | None, _option("values", "asp: precision of the values sent.", GEO_PANEL)
]
Lookahead = Annotated[
    float | None,
    _option(
        "lookahead",
        "asp: take gradients this share of the way to where the mirrors' undelivered "
        "steps will move the replica (0 = off; keeps the full momentum when on).",
        GEO_PANEL,
        min=0,
        max=2,
    ),
]
Period = Annotated[
    int | None, _option("period", "fedavg, diloco: local clocks per round.", GEO_PANEL, min=1)
]

# Every job option, in the order `--help` lists them within their panels.
JOB_OPTIONS: dict[str, Any] = {
    "topology": Topology,
    "sites": Sites,
    "dataset": Dataset,
    "data_dir": DataDir,
    "partition": Partition,
    "model": Model,
    "workers": Workers,
    "shards": Shards,
    "seed": Seed,
    "batch_size": BatchSize,
    "optimizer": Optimizer,
    "lr": LearningRate,
    "momentum": Momentum,
    "weight_decay": WeightDecay,
    "lr_schedule": LrSchedule,
    "clocks": Clocks,
    "target_accuracy": Target,
    "stop_at_target": StopAtTarget,
    "eval_every": EvalEvery,
    "eval_samples": EvalSamples,
    "geo": Policy,
    "threshold": Threshold,
    "threshold_schedule": ThresholdScheduleOpt,
    "budget_mbps": Budget,
    "staleness": Staleness,
    "values": Values,
    "lookahead": Lookahead,
    "period": Period,
}

Command = Callable[..., None]


def with_job_options(*, leave_out: tuple[str, ...] = ()) -> Callable[[Command], Command]:
    """Give a command the job options (but `leave_out`, which it declares itself).

    The command declares a parameter `job_options` and receives in it the options the
    user gave (name -> value); one list of options for every command that takes a job.
    """

    def decorate(command: Command) -> Command:
        own = inspect.signature(command)
        names = [name for name in JOB_OPTIONS if name not in leave_out]
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
            for name, kind in JOB_OPTIONS.items()
            if name in names
        ]
        kept = [p for p in own.parameters.values() if p.name != "job_options"]

        @functools.wraps(command)
        def run(**kwargs: Any) -> None:
            given = {name: kwargs.pop(name) for name in names}
            command(**kwargs, job_options={k: v for k, v in given.items() if v is not None})

        parameters = [*kept, *added]
        run.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
        return run

    return decorate
