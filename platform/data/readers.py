"""Reading a site's own data (schema.SiteData) into arrays, with numpy only: the edge
agent reads it to report on it, and never loads PyTorch.

Every problem is one line that names the file and what is wrong with it: missing,
unreadable, of the wrong shape, or with a label outside the schema.
"""

import gzip
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from atoll.platform.core.errors import AtollError
from atoll.platform.data.schema import DataReport, DataSchema, SiteData

_IDX_DTYPES: dict[int, str] = {
    0x08: "u1",
    0x09: "i1",
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif")


class DataError(AtollError):
    """A site's data is missing or does not fit its schema."""


@dataclass(frozen=True)
class Arrays:
    """Model inputs (float32, N x input shape) and labels (int64, N)."""

    x: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class SiteArrays:
    schema: DataSchema
    train: Arrays
    test: Arrays

    def report(self) -> DataReport:
        counts = np.bincount(self.train.y, minlength=self.schema.num_classes)
        return DataReport(
            schema=self.schema,
            samples=len(self.train),
            class_counts=tuple(int(c) for c in counts),
            test_samples=len(self.test),
        )


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (the MNIST family's format), gzip-compressed or not."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"cannot read {path}: {e}") from e
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise DataError(f"{path} is not an IDX file (bad magic number)")
    dtype, ndim = np.dtype(_IDX_DTYPES[raw[2]]), raw[3]
    header = 4 + 4 * ndim
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    expected = header + int(np.prod(shape)) * dtype.itemsize
    if len(raw) != expected:
        raise DataError(f"{path} is truncated or corrupt: {len(raw)} bytes, expected {expected}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)


def idx_file(folder: Path, stem: str) -> Path | None:
    """`stem`.gz or `stem` in `folder`, whichever is there."""
    return next((folder / n for n in (f"{stem}.gz", stem) if (folder / n).is_file()), None)


def to_inputs(raw: np.ndarray, schema: DataSchema, source: Path) -> np.ndarray:
    """Raw samples (N x shape) as the model's inputs: the schema's shape (a missing leading
    channel of 1 is added), integer pixels scaled to [0, 1] and standardised."""
    shape = schema.input_shape
    if tuple(raw.shape[1:]) == shape[1:] and shape[0] == 1:
        raw = raw.reshape(len(raw), *shape)
    if tuple(raw.shape[1:]) != shape:
        got = "x".join(map(str, raw.shape[1:])) or "scalar"
        raise DataError(
            f"{source}: inputs of shape {got}, the schema says {'x'.join(map(str, shape))}"
        )
    if not np.issubdtype(raw.dtype, np.integer):
        return np.ascontiguousarray(raw, dtype=np.float32)
    # In place on one float32 copy: a float64 detour costs 10x the time and memory.
    x = raw.astype(np.float32)
    x *= np.float32(1 / (255 * schema.std))
    x -= np.float32(schema.mean / schema.std)
    return x


def to_labels(raw: np.ndarray, schema: DataSchema, source: Path) -> np.ndarray:
    if raw.ndim != 1 or not np.issubdtype(raw.dtype, np.integer):
        raise DataError(
            f"{source}: labels must be one integer per sample, got {raw.dtype} {raw.shape}"
        )
    outside = raw[(raw < 0) | (raw >= schema.num_classes)]
    if len(outside):
        raise DataError(
            f"{source}: label {int(outside[0])} is outside the schema's "
            f"{schema.num_classes} classes (0..{schema.num_classes - 1})"
        )
    return raw.astype(np.int64)


def _arrays(x: np.ndarray, y: np.ndarray, schema: DataSchema, source: Path) -> Arrays:
    if len(x) != len(y):
        raise DataError(f"{source}: {len(x)} inputs but {len(y)} labels")
    if len(y) == 0:
        raise DataError(f"{source}: no samples")
    return Arrays(to_inputs(x, schema, source), to_labels(y, schema, source))


# -- the formats ------------------------------------------------------------------------


def _read_idx_split(folder: Path, prefix: str, schema: DataSchema) -> Arrays:
    stems = (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte")
    paths = [idx_file(folder, stem) for stem in stems]
    for stem, path in zip(stems, paths, strict=True):
        if path is None:
            raise DataError(f"{folder / stem}(.gz): missing")
    images, labels = paths
    assert images is not None and labels is not None
    return _arrays(read_idx(images), read_idx(labels), schema, images)


def _read_npz(path: Path, names: tuple[str, str], schema: DataSchema) -> Arrays:
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [n for n in names if n not in archive.files]
            if missing:
                raise DataError(f"{path}: no array {' or '.join(missing)} (has {archive.files})")
            x, y = archive[names[0]], archive[names[1]]
    except (OSError, ValueError, EOFError) as e:
        raise DataError(f"{path}: unreadable ({e})") from e
    return _arrays(x, y, schema, path)


def _read_folder(root: Path, schema: DataSchema) -> Arrays:
    from PIL import Image  # Pillow comes with matplotlib

    folders = sorted(p for p in root.iterdir() if p.is_dir())
    unknown = [p.name for p in folders if p.name not in schema.classes]
    if unknown:
        raise DataError(f"{root / unknown[0]}: not one of the schema's classes {schema.classes}")
    mode = {1: "L", 3: "RGB", 4: "RGBA"}.get(schema.input_shape[0])
    if mode is None or len(schema.input_shape) != 3:
        raise DataError(f"{root}: image folders need a schema of C x H x W with C 1, 3 or 4")
    images, labels = [], []
    for folder in folders:
        label = schema.classes.index(folder.name)
        for file in sorted(folder.iterdir()):
            if file.suffix.lower() not in _IMAGE_SUFFIXES:
                continue
            try:
                with Image.open(file) as image:
                    pixels = np.asarray(image.convert(mode), dtype=np.uint8)
            except OSError as e:
                raise DataError(f"{file}: unreadable image ({e})") from e
            images.append(pixels.reshape(*pixels.shape[:2], -1).transpose(2, 0, 1))
            labels.append(label)
    if not images:
        raise DataError(f"{root}: no images in its class folders")
    shapes = {i.shape for i in images}
    if len(shapes) > 1:
        raise DataError(f"{root}: images of different sizes {sorted(shapes)[:2]}")
    return _arrays(np.stack(images), np.array(labels, dtype=np.int64), schema, root)


def read_site_data(spec: SiteData) -> SiteArrays:
    schema = spec.resolved_schema
    for path in (spec.path, spec.test_path):
        if path is not None and not path.exists():
            raise DataError(f"{path}: missing")
    test_path = spec.test_path or spec.path
    if spec.format == "idx":
        if not spec.path.is_dir():
            raise DataError(f"{spec.path}: not a folder (idx data is a folder of IDX files)")
        train = _read_idx_split(spec.path, "train", schema)
        test = _read_idx_split(test_path, "t10k", schema)
    elif spec.format == "npz":
        train = _read_npz(spec.path, ("x", "y"), schema)
        names = ("x", "y") if spec.test_path else ("x_test", "y_test")
        test = _read_npz(test_path, names, schema)
    else:
        if not spec.path.is_dir():
            raise DataError(f"{spec.path}: not a folder (one sub-folder per class)")
        if spec.test_path is None:
            raise DataError(f"{spec.path}: folder data needs a test_path (the same layout)")
        train = _read_folder(spec.path, schema)
        test = _read_folder(spec.test_path, schema)
    return SiteArrays(schema, train, test)
