"""The part of a model one site gives another, its checks, and the three merges.

A part holds named float32 arrays. A "row" array holds only the rows of `classes`
(a classifier's weights and bias per class); any other array is whole (a CNN's
hidden dense layer). Plain numpy, no I/O: the receiving site checks a part
against its own model's shapes and merges it into its own arrays.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from atoll.platform.transfer.config import MergePolicy, WireDtype

HEADER_BYTES = 256  # a part's metadata (signature, classes, counts) as it travels
_F16_MAX = float(np.finfo(np.float16).max)


@dataclass(frozen=True)
class ModelPart:
    source: str
    source_version: int
    signature: str
    kind: str  # "rows" (logistic regression) or "head" (the CNN's classifier)
    classes: tuple[int, ...]
    arrays: Mapping[str, np.ndarray]
    row_arrays: frozenset[str]
    class_samples: tuple[int, ...]  # the source's samples of each class in `classes`
    samples: int = 0  # the source's samples in all

    def size_bytes(self) -> int:
        return HEADER_BYTES + sum(int(a.nbytes) for a in self.arrays.values())

    def describe(self) -> str:
        return f"{self.kind} of {self.source}@v{self.source_version} classes {list(self.classes)}"


class PartRefused(Exception):
    """A part this site will not merge; the message says why."""


def check_part(
    part: ModelPart, signature: str, own: Mapping[str, tuple[int, ...]], num_classes: int
) -> None:
    """Raise PartRefused naming what is wrong; a part that passes fits `own`."""
    if part.signature != signature:
        raise PartRefused(f"signature {part.signature} is not this model's {signature}")
    classes = list(part.classes)
    if not classes or len(set(classes)) != len(classes):
        raise PartRefused(f"classes {classes} are empty or repeat")
    if any(c < 0 or c >= num_classes for c in classes):
        raise PartRefused(f"classes {classes} fall outside 0..{num_classes - 1}")
    if len(part.class_samples) != len(classes) or any(n < 0 for n in part.class_samples):
        raise PartRefused("class_samples does not give one count per class")
    if not part.arrays:
        raise PartRefused("the part holds no arrays")
    for name, array in part.arrays.items():
        if name not in own:
            raise PartRefused(f"array {name!r} is not in this model")
        expected = tuple(own[name])
        if name in part.row_arrays:
            expected = (len(classes), *expected[1:])
        if array.shape != expected:
            raise PartRefused(f"array {name!r} has shape {array.shape}, expected {expected}")
        if array.dtype != np.float32:
            raise PartRefused(f"array {name!r} is {array.dtype}, expected float32")
        if not np.isfinite(array).all():
            raise PartRefused(f"array {name!r} holds NaN or infinity")


def merge_part(
    own: Mapping[str, np.ndarray],
    part: ModelPart,
    own_class_samples: Sequence[int],
    own_samples: int,
    policy: MergePolicy,
) -> dict[str, np.ndarray]:
    """The arrays `part` changes, merged with `own` by `policy`.

    replace: take the neighbour's; average: halfway; sample-weighted: each row
    weighted by the two sites' samples of its class (a class this site hardly saw
    is nearly replaced, one it knows well barely moves), whole arrays by all samples.
    """
    rows = np.asarray(part.classes)
    theirs_n = np.asarray(part.class_samples, dtype=np.float64)
    ours_n = np.asarray([own_class_samples[c] for c in part.classes], dtype=np.float64)
    merged: dict[str, np.ndarray] = {}
    for name, array in part.arrays.items():
        current = own[name][rows] if name in part.row_arrays else own[name]
        if policy == "replace":
            weight: np.ndarray | float = 1.0
        elif policy == "average":
            weight = 0.5
        elif name in part.row_arrays:
            weight = (theirs_n / np.maximum(theirs_n + ours_n, 1.0)).reshape(
                -1, *([1] * (array.ndim - 1))
            )
        else:
            weight = part.samples / max(part.samples + own_samples, 1)
        value = (weight * array + (1 - np.asarray(weight)) * current).astype(np.float32)
        if name in part.row_arrays:
            full = own[name].copy()
            full[rows] = value
            value = full
        merged[name] = value
    return merged


def encode_part(part: ModelPart, wire_dtype: WireDtype = "float32") -> bytes:
    """The wire form: a JSON header line, then the arrays' raw little-endian bytes.

    wire_dtype "float16" halves the bytes: weights a merge averages need no more than
    half precision (a relative error of 1e-3). decode_part gives float32 back either way,
    so a receiving site checks and merges float32 arrays as before."""
    if wire_dtype not in ("float32", "float16"):
        raise ValueError(f"wire dtype {wire_dtype!r} is not float32 or float16")
    if wire_dtype == "float16":
        for name, a in part.arrays.items():
            if np.isfinite(a).all() and np.abs(a).max(initial=0) > _F16_MAX:
                raise ValueError(f"array {name!r} does not fit float16")
    header = {
        "source": part.source,
        "source_version": part.source_version,
        "signature": part.signature,
        "kind": part.kind,
        "classes": list(part.classes),
        "class_samples": list(part.class_samples),
        "samples": part.samples,
        "row_arrays": sorted(part.row_arrays),
        "arrays": [[n, list(a.shape), str(a.dtype)] for n, a in part.arrays.items()],
        "wire": wire_dtype,
    }
    wire = np.dtype(wire_dtype).newbyteorder("<")
    body = b"".join(np.ascontiguousarray(a).astype(wire).tobytes() for a in part.arrays.values())
    return json.dumps(header).encode() + b"\n" + body


def decode_part(blob: bytes, max_bytes: int = 64 << 20) -> ModelPart:
    """Parse the wire form; anything malformed is PartRefused, never a crash."""
    if len(blob) > max_bytes:
        raise PartRefused(f"part of {len(blob)} bytes exceeds the {max_bytes}-byte cap")
    head, _, body = blob.partition(b"\n")
    try:
        header = json.loads(head)
        arrays: dict[str, np.ndarray] = {}
        offset = 0
        wire = header.get("wire")
        if wire not in (None, "float32", "float16"):
            raise PartRefused(f"wire dtype {wire!r} is not float32 or float16")
        for name, shape, dtype in header["arrays"]:
            dt = np.dtype(wire or dtype).newbyteorder("<")
            count = int(np.prod(shape))
            chunk = body[offset : offset + count * dt.itemsize]
            if len(chunk) != count * dt.itemsize:
                raise PartRefused(f"array {name!r} is cut short")
            arrays[name] = np.frombuffer(chunk, dtype=dt).reshape(shape).astype(np.dtype(dtype))
            offset += len(chunk)
        if offset != len(body):
            raise PartRefused(f"{len(body) - offset} bytes follow the last array")
        return ModelPart(
            source=str(header["source"]),
            source_version=int(header["source_version"]),
            signature=str(header["signature"]),
            kind=str(header["kind"]),
            classes=tuple(int(c) for c in header["classes"]),
            arrays=arrays,
            row_arrays=frozenset(str(n) for n in header["row_arrays"]),
            class_samples=tuple(int(n) for n in header["class_samples"]),
            samples=int(header["samples"]),
        )
    except PartRefused:
        raise
    except (ValueError, KeyError, TypeError) as e:
        raise PartRefused(f"malformed part: {e}") from e
