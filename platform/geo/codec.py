"""The one wire format for geo messages, versioned and validated on decode.

Layout (little-endian): a 32-byte header, then for sparse messages the indices,
then the values (`count` of them; dense messages have one per element of the
slice). A message may carry indices without values (the selective barrier's
notice) or no payload at all (a clock tick).

    magic "AT" | version u8 | kind u8 | flags u8 | pad u8 | origin u16 |
    clock u64 | offset u32 | length u32 | count u32 | index_bytes u32

flags: bit 0 sparse; bits 1-2 value type (0 none, 1 float32, 2 float16, 3 int8,
which is preceded by its float32 scale); bit 3 indices as LEB128 varints of the
gaps between them (gap = index - previous - 1), else uint32. A significant
update at 1% density costs about 1 byte of index and 1-2 of value, not 4 + 2.

Decoding checks everything a peer could get wrong or forge: version, kind,
flags, sizes against the payload and a cap, index order and range, and that
every value is finite. Anything else raises `CodecError`, and only that.
"""

import struct
from typing import Any

import numpy as np
import torch

from atoll.platform.geo.messages import GeoMessage, Kind

VERSION = 1
MAGIC = b"AT"
_HEADER = struct.Struct("<2sBBBxHQIIII")
HEADER_BYTES = _HEADER.size
_SPARSE, _VARINT = 0b0001, 0b1000
_INT8 = 3
_DTYPES: dict[int, np.dtype[Any]] = {1: np.dtype("<f4"), 2: np.dtype("<f2"), _INT8: np.dtype("i1")}
_DTYPE_CODES = {torch.float32: 1, torch.float16: 2, torch.int8: _INT8}
_SCALE = struct.Struct("<f")
_VARINT_MAX_BYTES = 5  # enough for any uint32 gap
# A generous cap on one message's slice: 256 M elements (1 GiB of float32).
DEFAULT_MAX_ELEMENTS = 1 << 28


class CodecError(ValueError):
    """The bytes are not a valid geo message of a version this build understands."""


def encode(message: GeoMessage) -> bytes:
    values, indices = message.values, message.indices
    dtype = None if values is None else values.dtype
    dtype_code = 0 if dtype is None else _DTYPE_CODES.get(dtype)
    if dtype_code is None:
        raise CodecError(f"cannot encode values of type {dtype}; use float32, float16, int8")
    if (dtype_code == _INT8) != (message.scale is not None):
        raise CodecError("int8 values need a scale, and only they have one")
    index_bytes = b""
    flags = dtype_code << 1
    if indices is not None:
        flags |= _SPARSE
        as_varints = _varints(indices.numpy())
        if len(as_varints) < 4 * len(indices):
            index_bytes, flags = as_varints, flags | _VARINT
        else:
            index_bytes = indices.numpy().astype("<u4").tobytes()
    count = len(values) if values is not None else len(indices) if indices is not None else 0
    header = _HEADER.pack(
        MAGIC,
        VERSION,
        int(message.kind),
        flags,
        message.origin,
        message.clock,
        message.offset,
        message.length,
        count,
        len(index_bytes),
    )
    parts = [header, index_bytes]
    if message.scale is not None:
        parts.append(_SCALE.pack(message.scale))
    if values is not None:
        parts.append(values.numpy().astype(_DTYPES[dtype_code]).tobytes())
    return b"".join(parts)


def encoded_size(message: GeoMessage) -> int:
    """Bytes `encode` would produce (for the simulator, and to pick sparse or dense)."""
    size = HEADER_BYTES
    if message.indices is not None:
        size += min(4 * len(message.indices), _varint_size(message.indices.numpy()))
    if message.scale is not None:
        size += _SCALE.size
    if message.values is not None:
        size += len(message.values) * message.values.element_size()
    return size


def dense_size(length: int, values: torch.Tensor, scaled: bool) -> int:
    """Bytes of a dense message of `length` values of this type."""
    return HEADER_BYTES + length * values.element_size() + (_SCALE.size if scaled else 0)


def decode(data: bytes, max_elements: int = DEFAULT_MAX_ELEMENTS) -> GeoMessage:
    if len(data) < HEADER_BYTES:
        raise CodecError(f"message of {len(data)} bytes is shorter than the header")
    fields = _HEADER.unpack_from(data)
    magic, version, kind, flags, origin, clock, offset, length, count, index_bytes = fields
    if magic != MAGIC:
        raise CodecError("not a geo message (bad magic)")
    if version != VERSION:
        raise CodecError(f"unsupported codec version {version}; this build speaks {VERSION}")
    try:
        kind = Kind(kind)
    except ValueError:
        raise CodecError(f"unknown message kind {kind}") from None
    if flags & ~0b1111:
        raise CodecError(f"unknown flags {flags:#x}")
    sparse, varint, dtype_code = bool(flags & _SPARSE), bool(flags & _VARINT), (flags >> 1) & 0b11
    if length > max_elements or offset > max_elements:
        raise CodecError(
            f"slice of {length} elements at {offset} exceeds the cap of {max_elements}"
        )
    if count > length:
        raise CodecError(f"message carries {count} values for a slice of {length}")
    if sparse:
        if not varint and index_bytes != 4 * count:
            raise CodecError(f"{count} uint32 indices need {4 * count} bytes, not {index_bytes}")
        if varint and (count == 0) != (index_bytes == 0):
            raise CodecError(f"{index_bytes} bytes of varints for {count} indices")
    else:
        if varint or index_bytes:
            raise CodecError("a dense message cannot carry indices")
        expected = length if dtype_code else 0
        if count != expected:
            raise CodecError(f"dense message carries {count} values for a slice of {length}")
    position = HEADER_BYTES
    if len(data) < position + index_bytes:
        raise CodecError("message is shorter than its indices")
    indices = None
    if sparse:
        raw = data[position : position + index_bytes]
        gaps = _from_varints(raw, count) if varint else None
        indices = _indices(raw, gaps, count, length)
    position += index_bytes
    scale = None
    if dtype_code == _INT8:
        if len(data) < position + _SCALE.size:
            raise CodecError("int8 message is missing its scale")
        (scale,) = _SCALE.unpack_from(data, position)
        if not (np.isfinite(scale) and scale > 0):
            raise CodecError("int8 scale must be finite and positive")
        position += _SCALE.size
    if not dtype_code:
        _expect_size(data, position)
        return GeoMessage(kind, origin, clock, offset, length, indices)
    dtype = _DTYPES[dtype_code]
    _expect_size(data, position + count * dtype.itemsize)
    values = np.frombuffer(data, dtype=dtype, count=count, offset=position)
    if dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise CodecError("values must be finite")
    tensor = torch.from_numpy(values.astype(dtype.newbyteorder("=")))
    return GeoMessage(kind, origin, clock, offset, length, indices, tensor, scale)


def _varint_size(indices: np.ndarray) -> int:
    if not len(indices):
        return 0
    return int(_varint_lengths(_gaps(indices)).sum())


def _gaps(indices: np.ndarray) -> np.ndarray:
    return np.diff(indices.astype(np.int64), prepend=-1) - 1


def _varint_lengths(gaps: np.ndarray) -> np.ndarray:
    lengths = np.ones(len(gaps), dtype=np.int64)
    for k in range(1, _VARINT_MAX_BYTES):
        lengths += gaps >= (1 << (7 * k))
    return lengths


def _varints(indices: np.ndarray) -> bytes:
    """LEB128 of the gaps between increasing indices, all at once."""
    if not len(indices):
        return b""
    gaps = _gaps(indices)
    lengths = _varint_lengths(gaps)
    starts = np.cumsum(lengths) - lengths
    out = np.zeros(int(lengths.sum()), dtype=np.uint8)
    for k in range(_VARINT_MAX_BYTES):
        has = lengths > k
        more = (lengths > k + 1).astype(np.uint8) << 7
        out[starts[has] + k] = ((gaps[has] >> (7 * k)) & 0x7F).astype(np.uint8) | more[has]
    return out.tobytes()


def _from_varints(raw: bytes, count: int) -> np.ndarray:
    data = np.frombuffer(raw, dtype=np.uint8)
    last = (data & 0x80) == 0
    ends = np.flatnonzero(last)
    if len(ends) != count or (len(data) and not last[-1]):
        raise CodecError(f"varint indices do not hold {count} whole numbers")
    starts = np.concatenate(([0], ends[:-1] + 1)) if count else np.zeros(0, dtype=np.int64)
    lengths = ends - starts + 1
    if count and lengths.max() > _VARINT_MAX_BYTES:
        raise CodecError("a varint index is longer than 5 bytes")
    place = np.arange(len(data)) - np.repeat(starts, lengths)
    digits = (data & 0x7F).astype(np.int64) << (7 * place)
    return np.add.reduceat(digits, starts) if count else np.zeros(0, dtype=np.int64)


def _indices(raw: bytes, gaps: np.ndarray | None, count: int, length: int) -> torch.Tensor:
    if gaps is None:
        values = np.frombuffer(raw, dtype="<u4", count=count).astype(np.int64)
        if count and np.any(np.diff(values) <= 0):
            raise CodecError("indices must be strictly increasing and inside the slice")
    else:
        if count and gaps.max() >= length:  # also keeps the running sum far from overflow
            raise CodecError("indices must be strictly increasing and inside the slice")
        values = np.cumsum(gaps + 1) - 1
    if count and values[-1] >= length:
        raise CodecError("indices must be strictly increasing and inside the slice")
    return torch.from_numpy(values)


def _expect_size(data: bytes, expected: int) -> None:
    if len(data) != expected:
        raise CodecError(f"message is {len(data)} bytes; its header says {expected}")
