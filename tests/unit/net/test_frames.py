import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.frames import Frame as WebSocketFrame
from websockets.frames import Opcode

from atoll.platform.net.errors import BadFrame
from atoll.platform.net.frames import (
    DATA_HEADER_BYTES,
    Ack,
    Challenge,
    Data,
    Hello,
    Proof,
    Welcome,
    decode,
    encode,
    encode_data,
    wire_bytes,
)

INCARNATION, NONCE, PROOF = b"i" * 16, b"n" * 32, b"p" * 32

FRAMES = [
    Hello("virginia", "sao-paulo", INCARNATION, NONCE),
    Hello("ß", "東京", INCARNATION, NONCE),
    Challenge(INCARNATION, NONCE, PROOF),
    Proof(PROOF, 2**64 - 1),
    Welcome(0),
    Data(1, b""),
    Data(7, b"payload"),
    Ack(12345),
]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: type(f).__name__)
def test_every_frame_survives_a_round_trip(frame: object) -> None:
    assert decode(encode(frame)) == frame  # type: ignore[arg-type]


def test_data_frames_carry_a_nine_byte_header() -> None:
    assert encode_data(3, b"xyz") == b"\x05" + (3).to_bytes(8, "big") + b"xyz"
    assert DATA_HEADER_BYTES == 9


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"", "empty frame"),
        ("text", "text message"),
        (b"\x63", "unknown frame kind 99"),
        (b"\x05\x00", "truncated DATA"),
        (encode(Ack(1)) + b"x", "ACK frame of 10 bytes, expected 9"),
        (encode(Challenge(INCARNATION, NONCE, PROOF))[:-1], "CHALLENGE frame of 80 bytes"),
        (encode(Hello("a", "b", INCARNATION, NONCE))[:-1], "truncated or empty site name"),
        (encode(Hello("a", "b", INCARNATION, NONCE)) + b"!", "trailing bytes after HELLO"),
        (encode(Hello("a", "b", INCARNATION, NONCE))[:-4] + b"\x01\xff\x01b", "not UTF-8"),
        (encode(Hello("a", "b", INCARNATION, NONCE))[:20], "truncated HELLO"),
    ],
)
def test_malformed_frames_raise_bad_frame(raw: bytes | str, problem: str) -> None:
    with pytest.raises(BadFrame, match=problem):
        decode(raw)


@given(st.binary(max_size=200))
def test_decoding_arbitrary_bytes_never_raises_anything_but_bad_frame(raw: bytes) -> None:
    with contextlib.suppress(BadFrame):
        decode(raw)


def test_fields_of_the_wrong_size_are_not_silently_padded() -> None:
    with pytest.raises(ValueError, match="expected 32 bytes"):
        encode(Challenge(INCARNATION, b"short", PROOF))
    with pytest.raises(ValueError, match="site name"):
        encode(Hello("x" * 256, "b", INCARNATION, NONCE))


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 100_000])
@pytest.mark.parametrize("masked", [False, True])
def test_wire_bytes_match_what_websockets_writes(size: int, masked: bool) -> None:
    written = WebSocketFrame(Opcode.BINARY, bytes(size)).serialize(mask=masked, extensions=[])
    assert wire_bytes(size, masked) == len(written)
