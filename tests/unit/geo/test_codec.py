import contextlib
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from atoll.platform.geo.codec import HEADER_BYTES, CodecError, decode, encode, encoded_size
from atoll.platform.geo.messages import GeoMessage, Kind, carrying, quantize


def roundtrip(message: GeoMessage) -> GeoMessage:
    data = encode(message)
    assert len(data) == encoded_size(message)
    return decode(data)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sparse_and_dense_round_trip(dtype: torch.dtype) -> None:
    indices = torch.tensor([0, 7, 99])
    values = torch.tensor([1.5, -2.25, 3.0], dtype=dtype)
    sparse = roundtrip(GeoMessage(Kind.UPDATE, 4, 123456789, 1000, 100, indices, values))
    assert sparse.kind == Kind.UPDATE
    assert sparse.origin == 4
    assert sparse.clock == 123456789
    assert sparse.offset == 1000
    assert sparse.length == 100
    assert torch.equal(sparse.indices, indices)
    assert torch.equal(sparse.values, values)
    dense = roundtrip(GeoMessage(Kind.RESULT, 1, 2, 0, 3, None, values))
    assert dense.indices is None
    assert torch.equal(dense.values, values)


def test_messages_without_values() -> None:
    tick = roundtrip(GeoMessage(Kind.CLOCK, 2, 5, 0, 10))
    assert tick.values is None
    assert tick.indices is None
    assert tick.clock == 5
    notice = roundtrip(GeoMessage(Kind.INDICES, 2, 5, 0, 10, torch.tensor([1, 4])))
    assert torch.equal(notice.indices, torch.tensor([1, 4]))
    assert notice.values is None


def test_carrying_picks_dense_when_sparse_would_be_larger() -> None:
    indices, values = torch.tensor([0, 1, 2, 3, 5, 6, 7, 9]), torch.ones(8, dtype=torch.float16)
    message = carrying(Kind.UPDATE, 0, 1, 0, 10, indices, values)
    assert message.indices is None  # 8 x (1 + 2) bytes > 10 x 2 bytes
    assert message.dense_values().tolist() == [1, 1, 1, 1, 0, 1, 1, 1, 0, 1]
    sparse = carrying(Kind.UPDATE, 0, 1, 0, 1000, indices, values)
    assert sparse.indices is not None


@pytest.mark.parametrize("gap", [0, 1, 127, 128, 16383, 16384, 2**21, 2**26])
def test_varint_indices_round_trip_across_byte_boundaries(gap: int) -> None:
    indices = torch.tensor([3, 3 + gap + 1, 3 + 2 * (gap + 1)])
    message = GeoMessage(Kind.UPDATE, 0, 0, 0, int(indices[-1]) + 1, indices, torch.ones(3))
    back = roundtrip(message)
    assert torch.equal(back.indices, indices)


def test_sparse_indices_cost_about_a_byte_at_one_percent_density() -> None:
    indices = torch.arange(0, 100_000, 100)
    message = GeoMessage(
        Kind.UPDATE, 0, 0, 0, 100_000, indices, torch.ones(1000, dtype=torch.float16)
    )
    assert encoded_size(message) == HEADER_BYTES + 1000 * (1 + 2)


def test_int8_values_travel_with_their_scale() -> None:
    values, scale = quantize(torch.tensor([0.5, -0.25, 0.001, 0.0]), "int8")
    assert values.dtype == torch.int8
    assert scale == pytest.approx(0.5 / 127)
    message = roundtrip(GeoMessage(Kind.UPDATE, 0, 0, 0, 4, None, values, scale))
    assert message.float_values().tolist() == pytest.approx([0.5, -0.25, 0.0, 0.0], abs=0.002)
    assert float(message.float_values()[0]) == pytest.approx(0.5)  # the largest is exact


def test_an_int8_message_without_a_scale_cannot_be_encoded() -> None:
    with pytest.raises(CodecError, match="need a scale"):
        encode(GeoMessage(Kind.UPDATE, 0, 0, 0, 1, None, torch.ones(1, dtype=torch.int8)))


def valid() -> bytes:
    return encode(
        GeoMessage(Kind.UPDATE, 1, 2, 0, 8, torch.tensor([1, 3]), torch.tensor([1.0, 2.0]))
    )


def with_uint32_indices(indices: list[int], length: int = 8) -> bytes:
    """A float32 sparse message with plain uint32 indices, built by hand."""
    header = struct.pack(
        "<2sBBBxHQIIII", b"AT", 1, 1, 0b011, 0, 0, 0, length, len(indices), 4 * len(indices)
    )
    values = struct.pack(f"<{len(indices)}f", *[1.0] * len(indices))
    return header + struct.pack(f"<{len(indices)}I", *indices) + values


def patch_header(data: bytes, fmt: str, position: int, value: int) -> bytes:
    raw = bytearray(data)
    struct.pack_into(fmt, raw, position, value)
    return bytes(raw)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "shorter than the header"),
        (b"XX" + valid()[2:], "bad magic"),
        (patch_header(valid(), "<B", 2, 9), "unsupported codec version 9"),
        (patch_header(valid(), "<B", 3, 99), "unknown message kind 99"),
        (patch_header(valid(), "<B", 4, 0b10000), "unknown flags"),
        (patch_header(valid(), "<B", 4, 0b1000 | 0b010), "cannot carry indices"),
        (valid()[:-1], "header says"),
        (valid() + b"\0", "header says"),
        (patch_header(valid(), "<I", 20, 1 << 30), "exceeds the cap"),
        (patch_header(valid(), "<I", 24, 9), "9 values for a slice of 8"),
        (patch_header(valid(), "<I", 28, 1), "do not hold 2 whole numbers"),
        (patch_header(with_uint32_indices([1, 2]), "<I", 28, 7), "need 8 bytes, not 7"),
        (with_uint32_indices([1, 2])[:36], "shorter than its indices"),
    ],
)
def test_malformed_messages_raise_codec_error(data: bytes, problem: str) -> None:
    with pytest.raises(CodecError, match=problem):
        decode(data)


@pytest.mark.parametrize(
    ("indices", "problem"),
    [
        ([3, 1], "strictly increasing"),
        ([1, 1], "strictly increasing"),
        ([2, 8], "inside the slice"),
    ],
)
def test_bad_uint32_indices_are_refused(indices: list[int], problem: str) -> None:
    with pytest.raises(CodecError, match=problem):
        decode(with_uint32_indices(indices))


def test_varints_that_run_off_the_slice_or_past_five_bytes_are_refused() -> None:
    data = bytearray(valid())
    data[HEADER_BYTES] = 0x7F  # a gap of 127 in a slice of 8
    with pytest.raises(CodecError, match="inside the slice"):
        decode(bytes(data))
    header = struct.pack("<2sBBBxHQIIII", b"AT", 1, 1, 0b1011, 0, 0, 0, 8, 1, 6)
    with pytest.raises(CodecError, match="longer than 5 bytes"):
        decode(header + b"\x80" * 5 + b"\x00" + struct.pack("<f", 1.0))


def test_a_bad_int8_scale_is_refused() -> None:
    good = encode(GeoMessage(Kind.UPDATE, 0, 0, 0, 2, None, torch.ones(2, dtype=torch.int8), 0.5))
    for scale in (0.0, -1.0, float("nan")):
        with pytest.raises(CodecError, match="scale must be finite and positive"):
            decode(good[:HEADER_BYTES] + struct.pack("<f", scale) + good[HEADER_BYTES + 4 :])
    with pytest.raises(CodecError, match="missing its scale"):
        decode(good[: HEADER_BYTES + 2])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_values_are_refused(bad: float) -> None:
    data = encode(GeoMessage(Kind.UPDATE, 0, 0, 0, 2, None, torch.tensor([1.0, bad])))
    with pytest.raises(CodecError, match="finite"):
        decode(data)


def test_a_smaller_cap_refuses_big_slices() -> None:
    with pytest.raises(CodecError, match="cap of 4"):
        decode(valid(), max_elements=4)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_codec_error(data: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode(data)


@st.composite
def messages(draw: st.DrawFn) -> GeoMessage:
    length = draw(st.integers(1, 3000))
    value_type = draw(st.sampled_from(["float32", "float16", "int8"]))
    finite = st.floats(-1e4, 1e4, allow_nan=False, width=16)
    if draw(st.booleans()):
        chosen = sorted(draw(st.sets(st.integers(0, length - 1), max_size=min(length, 64))))
        indices = torch.tensor(chosen, dtype=torch.int64)
        raw = draw(st.lists(finite, min_size=len(chosen), max_size=len(chosen)))
    else:
        length = min(length, 64)
        indices = None
        raw = draw(st.lists(finite, min_size=length, max_size=length))
    values, scale = quantize(torch.tensor(raw), value_type)
    kind = draw(st.sampled_from([Kind.UPDATE, Kind.FLUSH, Kind.CONTRIB, Kind.RESULT]))
    origin, clock = draw(st.integers(0, 65535)), draw(st.integers(0, 2**63))
    return GeoMessage(kind, origin, clock, 0, length, indices, values, scale)


@settings(max_examples=200, deadline=None)
@given(messages(), st.data())
def test_valid_messages_round_trip_and_every_truncation_is_refused(
    message: GeoMessage, data: st.DataObject
) -> None:
    encoded = encode(message)
    assert len(encoded) == encoded_size(message)
    back = decode(encoded)
    assert torch.equal(back.values, message.values)
    assert back.scale == message.scale
    if message.indices is None:
        assert back.indices is None
    else:
        assert torch.equal(back.indices, message.indices)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(CodecError):
        decode(encoded[:cut])
