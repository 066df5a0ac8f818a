"""Reconnect delays: exponential backoff with jitter, sans I/O."""

import random


class Backoff:
    """Delays that double from `initial_s` up to `max_s`. Each is drawn uniformly from
    the upper half of its range ("equal jitter"), so sites that lost a link at the same
    moment do not redial in lockstep, yet never retry sooner than half the nominal delay.
    """

    def __init__(self, initial_s: float, max_s: float, rng: random.Random | None = None) -> None:
        if not 0 < initial_s <= max_s:
            raise ValueError("backoff needs 0 < initial_s <= max_s")
        self.initial_s = initial_s
        self.max_s = max_s
        self.failures = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        nominal = min(self.max_s, self.initial_s * 2.0 ** min(self.failures, 62))
        self.failures += 1
        return nominal / 2 + self._rng.uniform(0, nominal / 2)

    def reset(self) -> None:
        """A connection got through: the next failure starts from `initial_s` again."""
        self.failures = 0
