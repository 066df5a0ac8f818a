"""Checks on devices' replies and their FedAvg aggregate: sans-IO, no Flower, no torch.

A reply carries the device's parameters (named arrays, as Flower's ArrayRecord holds
them) and its `num-examples` (Flower's weighting key in the reply's MetricRecord). A
reply is aggregated only when every array has the shape and dtype the site sent, every
value is finite and `num-examples` is a positive integer; otherwise it is refused with
a reason that names the device. The aggregate is Flower's FedAvg: the mean of the
devices' arrays weighted by their `num-examples`.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

WEIGHT_KEY = "num-examples"  # Flower's FedAvg weighting key (`weighted_by_key`)

Arrays = Mapping[str, npt.NDArray[np.generic]]


@dataclass(frozen=True)
class ArraySpec:
    shape: tuple[int, ...]
    dtype: str


def specs_of(arrays: Arrays) -> dict[str, ArraySpec]:
    """What every reply must match: the names, shapes and dtypes the site sent."""
    return {name: ArraySpec(tuple(a.shape), str(a.dtype)) for name, a in arrays.items()}


@dataclass(frozen=True)
class DeviceReply:
    """One device's answer to a training round, as read off its Flower message."""

    node_id: int
    arrays: Arrays
    metrics: Mapping[str, object] = field(default_factory=dict)

    @property
    def num_examples(self) -> int:
        return int(_number(self.metrics[WEIGHT_KEY]))


@dataclass(frozen=True)
class Refusal:
    node_id: int
    reason: str

    def __str__(self) -> str:
        return f"reply from node {self.node_id} refused: {self.reason}"


def check_reply(
    reply: DeviceReply, expected: Mapping[str, ArraySpec] | None = None
) -> Refusal | None:
    """None when `reply` may be aggregated; else why not. Without `expected` (an
    evaluation round) only `num-examples` is checked."""
    reason = _weight_problem(reply.metrics.get(WEIGHT_KEY))
    if reason is None and expected is not None:
        reason = _arrays_problem(reply.arrays, expected)
    return None if reason is None else Refusal(reply.node_id, reason)


def _weight_problem(examples: object) -> str | None:
    valid = (
        isinstance(examples, int | float)
        and not isinstance(examples, bool)
        and math.isfinite(examples)
        and examples == int(examples)
        and examples > 0
    )
    return None if valid else f"'{WEIGHT_KEY}' is {examples!r}, not a positive integer"


def _arrays_problem(arrays: Arrays, expected: Mapping[str, ArraySpec]) -> str | None:
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        return f"arrays differ from the site's: missing {missing}, unexpected {extra}"
    for name, spec in expected.items():
        array = arrays[name]
        if tuple(array.shape) != spec.shape:
            return f"'{name}' has shape {tuple(array.shape)}, expected {spec.shape}"
        if str(array.dtype) != spec.dtype:
            return f"'{name}' has dtype {array.dtype}, expected {spec.dtype}"
        if np.issubdtype(array.dtype, np.inexact) and not np.isfinite(array).all():
            return f"'{name}' holds NaN or infinite values"
    return None


def fedavg(
    replies: Sequence[DeviceReply], expected: Mapping[str, ArraySpec]
) -> dict[str, npt.NDArray[np.generic]]:
    """The mean of checked replies' arrays weighted by `num-examples`, in the sent dtypes.

    Summed in node order, so the same replies give the same bits whatever order they came in.
    """
    if not replies:
        raise ValueError("no replies to aggregate")
    total = sum(r.num_examples for r in replies)
    out: dict[str, npt.NDArray[np.generic]] = {}
    for name, spec in expected.items():
        acc = np.zeros(spec.shape, dtype=np.float64)
        for reply in sorted(replies, key=lambda r: r.node_id):
            acc += reply.arrays[name].astype(np.float64) * (reply.num_examples / total)
        out[name] = acc.astype(spec.dtype)
    return out


def weighted_metrics(replies: Sequence[DeviceReply]) -> dict[str, float]:
    """Numeric metrics averaged by `num-examples` (Flower's default), plus their total."""
    total = sum(r.num_examples for r in replies)
    if not total:
        return {}
    names = sorted(
        {k for r in replies for k, v in r.metrics.items() if k != WEIGHT_KEY and _is_number(v)}
    )
    out: dict[str, float] = {}
    for name in names:
        having = [r for r in replies if _is_number(r.metrics.get(name))]
        weight = sum(r.num_examples for r in having)
        out[name] = sum(_number(r.metrics[name]) * r.num_examples for r in having) / weight
    out[WEIGHT_KEY] = float(total)
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: object) -> float:
    if not _is_number(value):
        raise TypeError(f"{value!r} is not a number")
    return float(value)  # type: ignore[arg-type]
