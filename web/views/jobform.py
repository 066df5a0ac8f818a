"""The job form: its fields, what a submitted form (or an uploaded YAML job file) becomes
as a `GeoJob` spec, and the API's validation problems put back next to the fields they
name. The control plane validates; this only turns text into typed values."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from atoll.platform.data.names import DATASET_NAMES
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import POLICIES
from atoll.platform.model.names import MODEL_NAMES
from atoll.platform.net.topology import BUILTIN_DIR
from atoll.platform.service.schemas import Problem

Kind = Literal["text", "int", "float", "select", "checkbox"]
GENERAL = "_general"  # problems that name no field of the form
MAX_YAML_BYTES = 64 * 1024


@dataclass(frozen=True)
class FormField:
    name: str  # dotted path in the spec, e.g. geo.threshold; or name (not in the spec)
    label: str
    kind: Kind
    group: str
    help: str = ""
    options: tuple[str, ...] = ()
    optional: bool = False  # empty means "not set" (the spec's default, or none)

    @property
    def id(self) -> str:
        return "f-" + self.name.replace(".", "-").replace("_", "-")

    @property
    def in_spec(self) -> bool:
        return self.name != "name"


def topology_names() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in BUILTIN_DIR.glob("*.yaml")))


FIELDS: tuple[FormField, ...] = (
    FormField(
        "name", "Job name", "text", "Job", "letters, digits, . _ -; default job-<id>", optional=True
    ),
    FormField("dataset", "Dataset", "select", "Data", options=DATASET_NAMES),
    FormField("partition", "Partition", "text", "Data", "iid, label-skew:C or dirichlet:ALPHA"),
    FormField("model", "Model", "select", "Model", options=MODEL_NAMES),
    FormField(
        "topology",
        "Topology",
        "select",
        "Sites",
        "its sites are the agents the job runs on",
        options=topology_names(),
    ),
    FormField(
        "sites", "Sites", "int", "Sites", "the topology's first N sites; empty: all", optional=True
    ),
    FormField("workers", "Workers per site", "int", "Sites"),
    FormField("shards", "Shards per site", "int", "Sites"),
    FormField("batch_size", "Batch per worker", "int", "Training"),
    FormField("optimizer.name", "Optimizer", "select", "Training", options=("sgd", "adam")),
    FormField(
        "optimizer.lr",
        "Learning rate",
        "float",
        "Training",
        "empty: 0.05 for sgd, 0.001 for adam",
        optional=True,
    ),
    FormField("clocks", "Clocks", "int", "Training", "site iterations to run"),
    FormField(
        "target_accuracy",
        "Target accuracy",
        "float",
        "Training",
        "0 to 1; its time of arrival is reported",
        optional=True,
    ),
    FormField("eval_every", "Evaluate every", "int", "Training", "clocks"),
    FormField("eval_samples", "Evaluation samples", "int", "Training"),
    FormField("seed", "Seed", "int", "Training"),
    FormField("geo.policy", "Geo policy", "select", "Geo policy", options=POLICIES),
    FormField(
        "geo.threshold",
        "Threshold (asp)",
        "float",
        "Geo policy",
        "significance threshold v0: 0.01 = 1 %",
    ),
    FormField(
        "geo.staleness",
        "Staleness DS (asp)",
        "int",
        "Geo policy",
        "clocks a site may run ahead of its slowest mirror",
    ),
    FormField(
        "geo.value_type",
        "Values (asp)",
        "select",
        "Geo policy",
        options=("float32", "float16", "int8"),
    ),
    FormField(
        "geo.budget_mbps",
        "WAN budget, Mbit/s (asp)",
        "float",
        "Geo policy",
        "adaptive threshold; empty: off",
        optional=True,
    ),
    FormField(
        "geo.period", "Period H (fedavg, diloco)", "int", "Geo policy", "local clocks per round"
    ),
)
BY_NAME = {f.name: f for f in FIELDS}


def defaults() -> dict[str, str]:
    """Each field's value in a fresh form: the spec's defaults."""
    spec = GeoJob().model_dump(mode="json")
    values = {}
    for f in FIELDS:
        if f.name == "name":
            values[f.name] = ""
            continue
        value: Any = spec
        for part in f.name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        values[f.name] = (
            "" if value is None or (f.optional and f.name == "optimizer.lr") else str(value)
        )
    return values


@dataclass
class Submission:
    """A form read: the spec to send and the job's name, or what is wrong with it."""

    spec: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    errors: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)  # as typed, to fill the form again


def from_form(form: Mapping[str, str]) -> Submission:
    result = Submission(values={f.name: str(form.get(f.name, "")).strip() for f in FIELDS})
    result.name = result.values["name"] or None
    for f in FIELDS:
        if not f.in_spec:
            continue
        text = result.values[f.name]
        if text == "":
            if not f.optional:
                result.errors[f.name] = "is required"
            continue
        try:
            value = _typed(f.kind, text)
        except ValueError as e:
            result.errors[f.name] = str(e)
            continue
        _put(result.spec, f.name.split("."), value)
    return result


def from_yaml(text: str, name: str | None) -> Submission:
    """An uploaded job file (the format of `--job`): the whole spec."""
    result = Submission(name=name or None)
    if len(text.encode()) > MAX_YAML_BYTES:
        result.errors["job_file"] = f"is larger than {MAX_YAML_BYTES // 1024} KiB"
        return result
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as e:
        result.errors["job_file"] = f"is not valid YAML: {e}".splitlines()[0]
        return result
    if not isinstance(loaded, dict):
        result.errors["job_file"] = "must be a mapping of job fields (see examples/jobs/)"
        return result
    result.spec = loaded
    return result


def _typed(kind: Kind, text: str) -> Any:
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise ValueError("must be a whole number") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise ValueError("must be a number") from None
    return text


def _put(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value


def place_problems(problems: Sequence[Problem], fallback: str = GENERAL) -> dict[str, str]:
    """The API's problems by form field: `spec.geo.threshold` goes next to geo.threshold;
    one that names no field of the form goes to `fallback` (the YAML field, or the top)."""
    placed: dict[str, str] = {}
    for p in problems:
        name = p.field.removeprefix("spec.") if p.field.startswith("spec.") else p.field
        target = name if name in BY_NAME else fallback
        text = p.problem if target != fallback or not p.field else f"{p.field}: {p.problem}"
        placed[target] = f"{placed[target]}; {text}" if target in placed else text
    return placed
