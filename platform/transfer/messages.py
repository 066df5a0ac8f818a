"""What two cartel sites say to each other over their link: a request for a part, and the
answer (the part, or why not). One tag byte, then the body: a JSON request or refusal,
or a part in its own wire form (parts.encode_part). Every answer names the request it
answers, so a late answer to a request given up on is told apart and dropped.

The giver decides whether it is a good source: the registry keeps each site's overall
accuracy, not its accuracy per class, so the check of the drifted classes (Cartel's
"good on the classes that drifted") is made where that accuracy is known first-hand.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from atoll.platform.transfer.config import Fraction, WireDtype
from atoll.platform.transfer.neighbours import accurate_on
from atoll.platform.transfer.parts import ModelPart, PartRefused, decode_part, encode_part

_REQUEST, _PART, _REFUSAL = b"Q", b"P", b"R"


class PartRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(ge=0)
    signature: str
    classes: tuple[int, ...] = Field(description="rows wanted")
    drifted: tuple[int, ...] = Field(description="the giver must be good on these")
    min_accuracy: Fraction


class PartDeclined(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    reason: str


@dataclass(frozen=True)
class PartAnswer:
    """The part that came back for request `id`."""

    id: int
    part: ModelPart


CartelMessage = PartRequest | PartDeclined | PartAnswer


class Garbled(Exception):
    """A message no cartel site sends; the message says what is wrong."""


def encode(message: CartelMessage, wire_dtype: WireDtype = "float32") -> bytes:
    """`message` as it crosses the link: a part in its wire form (`wire_dtype` as the giver's
    config says), as the simulator counts it."""
    if isinstance(message, PartAnswer):
        return _PART + message.id.to_bytes(8, "big") + encode_part(message.part, wire_dtype)
    tag = _REQUEST if isinstance(message, PartRequest) else _REFUSAL
    return tag + message.model_dump_json().encode()


def decode(payload: bytes) -> CartelMessage:
    """Raise Garbled for anything malformed (a bad part included: PartRefused's reason)."""
    tag, body = payload[:1], payload[1:]
    try:
        if tag == _REQUEST:
            return PartRequest.model_validate_json(body)
        if tag == _REFUSAL:
            return PartDeclined.model_validate_json(body)
        if tag == _PART and len(body) >= 8:
            return PartAnswer(id=int.from_bytes(body[:8], "big"), part=decode_part(body[8:]))
    except (ValidationError, PartRefused) as e:
        raise Garbled(str(e)) from e
    raise Garbled(f"unknown message tag {tag!r}")


def declines(
    request: PartRequest,
    signature: str,
    class_accuracy: Sequence[float | None],
) -> str | None:
    """Why this site will not give the part asked for, or None when it will."""
    if request.signature != signature:
        return f"model signature {signature} is not the asker's {request.signature}"
    if not accurate_on(class_accuracy, request.drifted, request.min_accuracy):
        shown = {c: class_accuracy[c] if c < len(class_accuracy) else None for c in request.drifted}
        return f"not good on the drifted classes (accuracy {shown}, wanted {request.min_accuracy})"
    return None


def classes_to_give(request: PartRequest, class_samples: Sequence[int]) -> tuple[int, ...]:
    """The rows a giver sends: those asked for that it trained on, and the drifted ones
    whatever (the asker asked for them by name)."""
    return tuple(
        c
        for c in request.classes
        if c in request.drifted or (c < len(class_samples) and class_samples[c] > 0)
    )
