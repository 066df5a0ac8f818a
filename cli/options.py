"""Options shared by `atoll train` and `atoll sim`: one definition, one help text."""

from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated

import typer

from atoll.platform.data import DATASETS
from atoll.platform.geo.spec import POLICIES, GeoSpec
from atoll.platform.model import MODELS
from atoll.platform.model.optim import OptimizerSpec

DatasetName = Enum("DatasetName", {name: name for name in DATASETS}, type=str)
ModelName = Enum("ModelName", {name: name for name in MODELS}, type=str)
PolicyName = Enum("PolicyName", {name: name for name in POLICIES}, type=str)
DEFAULT_LR = {"sgd": 0.05, "adam": 0.001}


class OptimizerName(StrEnum):
    sgd = "sgd"
    adam = "adam"


class Schedule(StrEnum):
    constant = "constant"
    cosine = "cosine"


class ThresholdSchedule(StrEnum):
    constant = "constant"
    inverse_sqrt = "inverse-sqrt"
    lr = "lr"


class ValueType(StrEnum):
    float32 = "float32"
    float16 = "float16"
    int8 = "int8"


Out = Annotated[Path, typer.Option(help="Run folder: config, log.jsonl, summary.json, ...")]
Dataset = Annotated[DatasetName, typer.Option(help="Training data.")]
DataDir = Annotated[
    Path | None, typer.Option(help="Folder holding the datasets [env: ATOLL_DATA_DIR].")
]
Model = Annotated[ModelName, typer.Option(help="Model from the zoo.")]
Workers = Annotated[int, typer.Option(min=1, help="Worker ranks per site (K).")]
Shards = Annotated[int, typer.Option(min=1, help="Parameter-server shards per site (S).")]
BatchSize = Annotated[int, typer.Option(min=1, help="Batch per worker.")]
Optimizer = Annotated[OptimizerName, typer.Option()]
LearningRate = Annotated[float | None, typer.Option(help="Default 0.05 (sgd), 0.001 (adam).")]
Momentum = Annotated[float, typer.Option(min=0, help="SGD momentum, below 1.")]
WeightDecay = Annotated[float, typer.Option(min=0)]
LrSchedule = Annotated[Schedule, typer.Option()]
Seed = Annotated[int, typer.Option()]
Overwrite = Annotated[bool, typer.Option(help="Replace an earlier run in --out.")]

Topology = Annotated[
    str, typer.Option(help="lan, three-continents, gaia-11, or a topology .yaml file.")
]
Sites = Annotated[int | None, typer.Option(min=1, help="Use the topology's first N sites.")]
Partition = Annotated[
    str,
    typer.Option(help="How the training set splits across sites: iid, label-skew:C, dirichlet:A."),
]
Policy = Annotated[PolicyName, typer.Option("--geo", help="Geo policy between sites.")]
Threshold = Annotated[float, typer.Option(min=0, help="asp: significance threshold (0.01 = 1%).")]
ThresholdScheduleOpt = Annotated[
    ThresholdSchedule, typer.Option("--threshold-schedule", help="asp: how the threshold decays.")
]
Budget = Annotated[
    float | None,
    typer.Option(min=0, help="asp: adapt the threshold to keep each site's WAN egress near this."),
]
Staleness = Annotated[int, typer.Option(min=0, help="asp: mirror clock bound DS.")]
Values = Annotated[ValueType, typer.Option(help="asp: precision of the values sent.")]
Lookahead = Annotated[
    float,
    typer.Option(
        min=0,
        max=2,
        help="asp: take gradients this share of the way to where the mirrors' undelivered "
        "steps will move the replica (0 = off; keeps the full momentum when on).",
    ),
]
Period = Annotated[int, typer.Option(min=1, help="fedavg, diloco: local clocks per round.")]
Clocks = Annotated[int, typer.Option(min=1, help="Site iterations to run.")]
Target = Annotated[
    float | None, typer.Option(min=0, max=1, help="Accuracy whose time of arrival is reported.")
]
StopAtTarget = Annotated[bool, typer.Option(help="Stop once the target accuracy is reached.")]
EvalEvery = Annotated[int, typer.Option(min=1, help="Clocks between test evaluations.")]
EvalSamples = Annotated[int, typer.Option(min=1, help="Test images per periodic evaluation.")]


def optimizer_spec(
    optimizer: OptimizerName,
    lr: float | None,
    momentum: float,
    weight_decay: float,
    schedule: Schedule,
) -> OptimizerSpec:
    return OptimizerSpec(
        name=optimizer.value,
        lr=DEFAULT_LR[optimizer.value] if lr is None else lr,
        momentum=momentum,
        weight_decay=weight_decay,
        schedule=schedule.value,
    )


def geo_spec(
    policy: PolicyName,
    *,
    threshold: float,
    threshold_schedule: ThresholdSchedule,
    budget_mbps: float | None,
    staleness: int,
    values: ValueType,
    period: int,
    lookahead: float,
) -> GeoSpec:
    return GeoSpec(
        policy=policy.value,
        threshold=threshold,
        threshold_schedule=threshold_schedule.value,
        budget_mbps=budget_mbps,
        staleness=staleness,
        value_type=values.value,
        period=period,
        lookahead=lookahead,
    )
