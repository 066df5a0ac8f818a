"""Gaia's selective barrier, receiver side.

When a sender's significant updates queue up faster than its WAN link carries
them, it first sends just their indices (a small control message that overtakes
the queued data). The receiver then holds back reads of exactly those
parameters until the values arrive, so no site computes with a parameter it
knows to be significantly out of date.
"""

import torch


class SelectiveBarrier:
    def __init__(self) -> None:
        self._pending: dict[tuple[int, int], torch.Tensor] = {}  # (origin, clock) -> indices

    def announce(self, origin: int, clock: int, indices: torch.Tensor) -> None:
        self._pending[(origin, clock)] = indices

    def arrived(self, origin: int, clock: int) -> None:
        self._pending.pop((origin, clock), None)

    def forget(self, origin: int) -> None:
        """A lost or restarted site's announcements will never be fulfilled."""
        for key in [k for k in self._pending if k[0] == origin]:
            del self._pending[key]

    def blocked(self) -> int:
        """How many parameter reads are held back."""
        return sum(len(ix) for ix in self._pending.values())

    def blocking_sites(self) -> tuple[int, ...]:
        return tuple(sorted({origin for origin, _ in self._pending}))
