"""The link protocol's frames: one frame per binary WebSocket message, sans I/O.

Every frame starts with a one-byte kind. Numbers are big-endian; site names are
UTF-8 with a one-byte length. A connection carries, in order:

    dialer -> acceptor   HELLO      version, dialer name, acceptor name, incarnation, nonce
    acceptor -> dialer   CHALLENGE  incarnation, nonce, acceptor's proof
    dialer -> acceptor   PROOF      dialer's proof, last sequence number received
    acceptor -> dialer   WELCOME    last sequence number received
    both ways            DATA       sequence number, payload
    both ways            ACK        cumulative: every sequence number up to this one arrived

Idle links send ACK frames as heartbeats: repeating a cumulative ack is harmless.
"""

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from atoll.platform.net.errors import BadFrame

PROTOCOL_VERSION = 1
INCARNATION_BYTES = 16
NONCE_BYTES = 32
PROOF_BYTES = 32  # HMAC-SHA256
MAX_NAME_BYTES = 255


class FrameKind(IntEnum):
    HELLO = 1
    CHALLENGE = 2
    PROOF = 3
    WELCOME = 4
    DATA = 5
    ACK = 6


@dataclass(frozen=True)
class Hello:
    site: str  # the dialer
    peer: str  # whom the dialer means to reach
    incarnation: bytes
    nonce: bytes
    version: int = PROTOCOL_VERSION


@dataclass(frozen=True)
class Challenge:
    incarnation: bytes
    nonce: bytes
    proof: bytes


@dataclass(frozen=True)
class Proof:
    proof: bytes
    received_through: int


@dataclass(frozen=True)
class Welcome:
    received_through: int


@dataclass(frozen=True)
class Data:
    seq: int
    payload: bytes


@dataclass(frozen=True)
class Ack:
    through: int


Frame = Hello | Challenge | Proof | Welcome | Data | Ack

_HELLO_FIXED = struct.Struct(f"!BB{INCARNATION_BYTES}s{NONCE_BYTES}s")
_CHALLENGE = struct.Struct(f"!B{INCARNATION_BYTES}s{NONCE_BYTES}s{PROOF_BYTES}s")
_PROOF = struct.Struct(f"!B{PROOF_BYTES}sQ")
_SEQ = struct.Struct("!BQ")  # WELCOME, ACK, and the header of DATA
DATA_HEADER_BYTES = _SEQ.size
ACK_BYTES = _SEQ.size


def encode_data(seq: int, payload: bytes) -> bytes:
    """A DATA frame; the one frame on the hot path, so it skips the dataclass."""
    return _SEQ.pack(FrameKind.DATA, seq) + payload


def encode(frame: Frame) -> bytes:
    match frame:
        case Data(seq, payload):
            return encode_data(seq, payload)
        case Ack(through):
            return _SEQ.pack(FrameKind.ACK, through)
        case Welcome(received_through):
            return _SEQ.pack(FrameKind.WELCOME, received_through)
        case Proof(proof, received_through):
            return _PROOF.pack(FrameKind.PROOF, _exact(proof, PROOF_BYTES), received_through)
        case Challenge(incarnation, nonce, proof):
            return _CHALLENGE.pack(
                FrameKind.CHALLENGE,
                _exact(incarnation, INCARNATION_BYTES),
                _exact(nonce, NONCE_BYTES),
                _exact(proof, PROOF_BYTES),
            )
        case Hello(site, peer, incarnation, nonce, version):
            fixed = _HELLO_FIXED.pack(
                FrameKind.HELLO,
                version,
                _exact(incarnation, INCARNATION_BYTES),
                _exact(nonce, NONCE_BYTES),
            )
            return fixed + _encode_name(site) + _encode_name(peer)
    raise TypeError(f"not a frame: {frame!r}")


def decode(raw: bytes | str) -> Frame:
    """Parse one frame; anything malformed raises BadFrame, never another exception."""
    if not isinstance(raw, bytes):
        raise BadFrame("text message where binary frames are expected")
    if not raw:
        raise BadFrame("empty frame")
    kind = raw[0]
    if kind == FrameKind.DATA:
        if len(raw) < DATA_HEADER_BYTES:
            raise BadFrame("truncated DATA frame")
        return Data(_SEQ.unpack_from(raw)[1], raw[DATA_HEADER_BYTES:])
    if kind == FrameKind.ACK:
        return Ack(_unpack_exact(_SEQ, raw, "ACK")[1])
    if kind == FrameKind.WELCOME:
        return Welcome(_unpack_exact(_SEQ, raw, "WELCOME")[1])
    if kind == FrameKind.PROOF:
        _, proof, received_through = _unpack_exact(_PROOF, raw, "PROOF")
        return Proof(proof, received_through)
    if kind == FrameKind.CHALLENGE:
        _, incarnation, nonce, proof = _unpack_exact(_CHALLENGE, raw, "CHALLENGE")
        return Challenge(incarnation, nonce, proof)
    if kind == FrameKind.HELLO:
        return _decode_hello(raw)
    raise BadFrame(f"unknown frame kind {kind}")


def websocket_overhead(payload_bytes: int, masked: bool) -> int:
    """Bytes RFC 6455 adds around one unfragmented message: the header, plus the 4-byte
    mask that a client (the dialer) must put on every frame it sends."""
    if payload_bytes < 126:
        header = 2
    elif payload_bytes < 1 << 16:
        header = 4
    else:
        header = 10
    return header + (4 if masked else 0)


def wire_bytes(frame_bytes: int, masked: bool) -> int:
    """What one frame of ours costs on the socket, WebSocket framing included."""
    return frame_bytes + websocket_overhead(frame_bytes, masked)


def _decode_hello(raw: bytes) -> Hello:
    if len(raw) < _HELLO_FIXED.size:
        raise BadFrame("truncated HELLO frame")
    _, version, incarnation, nonce = _HELLO_FIXED.unpack_from(raw)
    site, offset = _decode_name(raw, _HELLO_FIXED.size)
    peer, offset = _decode_name(raw, offset)
    if offset != len(raw):
        raise BadFrame("trailing bytes after HELLO frame")
    return Hello(site, peer, incarnation, nonce, version)


def _encode_name(name: str) -> bytes:
    encoded = name.encode()
    if not 0 < len(encoded) <= MAX_NAME_BYTES:
        raise ValueError(f"site name must be 1..{MAX_NAME_BYTES} UTF-8 bytes: {name!r}")
    return bytes([len(encoded)]) + encoded


def _decode_name(raw: bytes, offset: int) -> tuple[str, int]:
    if offset >= len(raw):
        raise BadFrame("truncated site name")
    length = raw[offset]
    end = offset + 1 + length
    if length == 0 or end > len(raw):
        raise BadFrame("truncated or empty site name")
    try:
        return raw[offset + 1 : end].decode(), end
    except UnicodeDecodeError:
        raise BadFrame("site name is not UTF-8") from None


def _unpack_exact(layout: struct.Struct, raw: bytes, what: str) -> tuple[Any, ...]:
    if len(raw) != layout.size:
        raise BadFrame(f"{what} frame of {len(raw)} bytes, expected {layout.size}")
    return layout.unpack(raw)


def _exact(value: bytes, size: int) -> bytes:
    # struct would silently pad or cut a wrong-sized field
    if len(value) != size:
        raise ValueError(f"expected {size} bytes, got {len(value)}")
    return value
