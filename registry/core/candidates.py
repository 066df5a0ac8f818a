"""The neighbour candidates of each model signature, kept for a moment between queries.

Reading every live site's priors is most of a neighbour query's cost (10,000 rows at
10,000 sites); the ranking itself is a few milliseconds of numpy. So each server
process keeps the candidates it read for `ttl_s` seconds: answers reflect reports and
heartbeats at most that old, next to a liveness window of minutes. The asking site's
own priors are always read afresh.
"""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Candidates:
    site_ids: list[str]
    priors: np.ndarray  # one row per site, zero-padded to the widest


class CandidateCache:
    def __init__(
        self,
        ttl_s: float,
        max_signatures: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_signatures = max_signatures
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, float], tuple[Candidates, float]] = OrderedDict()

    def get(self, signature: str, window_s: float) -> Candidates | None:
        key = (signature, window_s)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or self._clock() >= entry[1]:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, signature: str, window_s: float, candidates: Candidates) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            self._entries[(signature, window_s)] = (candidates, self._clock() + self.ttl_s)
            self._entries.move_to_end((signature, window_s))
            while len(self._entries) > self.max_signatures:
                self._entries.popitem(last=False)  # the signature asked about longest ago
