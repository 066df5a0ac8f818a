"""Opaque cursors for keyset pagination: a page starts after the last row of the previous
one, so rows inserted meanwhile never shift a page or show up twice."""

import base64
import binascii
import json
from typing import Any


class CursorError(ValueError):
    pass


def encode_cursor(position: list[Any]) -> str:
    raw = json.dumps(position, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, kinds: tuple[type, ...]) -> list[Any]:
    """The position a cursor holds; `kinds` are the types of its parts, in order."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        position = json.loads(raw)
    except (binascii.Error, ValueError) as e:
        raise CursorError("is not a cursor this service issued") from e
    if (
        not isinstance(position, list)
        or len(position) != len(kinds)
        or not all(type(v) is k for v, k in zip(position, kinds, strict=True))
    ):
        raise CursorError("is not a cursor this service issued")
    return position
