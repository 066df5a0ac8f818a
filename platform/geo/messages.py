"""What sites say to each other about the model, before any encoding."""

from dataclasses import dataclass
from enum import IntEnum

import torch

from atoll.platform.geo.spec import ValueType


class Kind(IntEnum):
    UPDATE = 1  # add these values to the replica (ASP's significant updates)
    INDICES = 2  # selective barrier: updates to these indices are on their way
    CLOCK = 3  # mirror clock tick, when there is nothing significant to send
    FLUSH = 4  # the sender's last update: its accumulator, in full
    CONTRIB = 5  # round-based sync: a site's change since the round began, to the piece's owner
    RESULT = 6  # round-based sync: the owner's new values for its piece
    SNAPSHOT = 7  # the sender's replica, for a site that rejoins
    HELLO = 8  # a (re)started site asks its mirrors for a snapshot
    ESTIMATE = 9  # tracking asp: the sender's whole estimate of its update, for a rejoiner
    CLASS_COUNTS = 10  # asp: the sender's class counts (no values: it does not know them)


class Lane(IntEnum):
    """Control messages are small and overtake queued bulk data on a link."""

    CONTROL = 0
    BULK = 1


BROADCAST = -1  # destination: every other site


@dataclass(frozen=True, eq=False)
class GeoMessage:
    """A message about the slice [offset, offset + length) of the model vector.

    `values` alone is dense (one per element of the slice); with `indices` (relative
    to offset, strictly increasing) it is sparse. Messages without a payload carry
    neither.
    """

    kind: Kind
    origin: int  # site index
    clock: int
    offset: int
    length: int
    indices: torch.Tensor | None = None
    values: torch.Tensor | None = None  # float32, float16, or int8 with `scale`
    scale: float | None = None  # int8 values stand for values * scale

    @property
    def is_sparse(self) -> bool:
        return self.indices is not None

    def float_values(self) -> torch.Tensor:
        """The values as the receiver applies them."""
        assert self.values is not None
        values = self.values.float()
        return values * self.scale if self.scale is not None else values

    def dense_values(self) -> torch.Tensor:
        """The payload as a dense vector over the slice (zeros where sparse has nothing)."""
        if self.values is None:
            return torch.zeros(self.length)
        if self.indices is None:
            return self.float_values()
        dense = torch.zeros(self.length)
        dense[self.indices] = self.float_values()
        return dense

    def add_to(self, target: torch.Tensor) -> None:
        """Add the payload into `target`, a view of this message's slice."""
        if self.values is None:
            return
        if self.indices is None:
            target += self.float_values()
        else:
            target.index_add_(0, self.indices, self.float_values())


def quantize(values: torch.Tensor, value_type: ValueType) -> tuple[torch.Tensor, float | None]:
    """Values as they will travel: (tensor, scale). int8 uses one scale per message,
    max |value| / 127, so the largest value is exact and small ones may round to 0."""
    if value_type == "float32":
        return values.float(), None
    if value_type == "float16":
        return values.to(torch.float16), None
    peak = float(values.abs().max()) if len(values) else 0.0
    # A float32 scale, as it travels: the sender must round with what the receiver gets.
    scale = float(torch.tensor(peak / 127 if peak > 0 else 1.0, dtype=torch.float32))
    return torch.round(values / scale).clamp_(-127, 127).to(torch.int8), scale


def as_sent(values: torch.Tensor, scale: float | None) -> torch.Tensor:
    """What receivers add for `quantize`'s output: the sender subtracts exactly this."""
    return values.float() * scale if scale is not None else values.float()


def take_sent(
    buffer: torch.Tensor, indices: torch.Tensor, value_type: ValueType
) -> tuple[torch.Tensor, float | None]:
    """The elements of `buffer` at `indices` as they travel (`quantize`), taken out of it
    exactly as receivers add them: what the rounding lost stays (error feedback)."""
    values, scale = quantize(buffer[indices], value_type)
    buffer.index_add_(0, indices, -as_sent(values, scale))
    return values, scale


def largest(values: torch.Tensor, k: int) -> torch.Tensor:
    """Indices (increasing) of the k largest |values|, leaving out zeros: top-k selection."""
    chosen = values.abs().topk(min(k, len(values)), sorted=False).indices
    return chosen[values[chosen] != 0].sort().values


def carrying(
    kind: Kind,
    origin: int,
    clock: int,
    offset: int,
    length: int,
    indices: torch.Tensor,
    values: torch.Tensor,
    scale: float | None = None,
) -> GeoMessage:
    """A message with these (index, value) pairs, sparse or dense, whichever is smaller."""
    from atoll.platform.geo.codec import dense_size, encoded_size  # the codec imports this module

    sparse = GeoMessage(kind, origin, clock, offset, length, indices, values, scale)
    if encoded_size(sparse) <= dense_size(length, values, scale is not None):
        return sparse
    dense = torch.zeros(length, dtype=values.dtype)
    dense[indices] = values
    return GeoMessage(kind, origin, clock, offset, length, None, dense, scale)


@dataclass(frozen=True)
class Outbound:
    """A message a policy wants sent: to one site or to every other (BROADCAST)."""

    to: int
    message: GeoMessage
    lane: Lane = Lane.BULK
