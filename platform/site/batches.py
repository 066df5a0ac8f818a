"""Which samples each worker trains on at each step.

A pure function of (seed, step), so a resumed run sees exactly the batches an
uninterrupted one would, and K workers with batch b see the same samples as one
process with batch K*b.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from atoll.platform.core.errors import AtollError


@dataclass(frozen=True)
class BatchPlan:
    num_samples: int
    batch_per_worker: int
    workers: int
    seed: int

    def __post_init__(self) -> None:
        if self.batch_per_worker < 1:
            raise AtollError(f"batch size must be at least 1, got {self.batch_per_worker}")
        if self.steps_per_epoch < 1:
            raise AtollError(
                f"{self.num_samples} training samples are fewer than one global batch of "
                f"{self.global_batch} ({self.workers} workers x {self.batch_per_worker})"
            )

    @property
    def global_batch(self) -> int:
        return self.batch_per_worker * self.workers

    @property
    def steps_per_epoch(self) -> int:
        return self.num_samples // self.global_batch  # the last partial batch is dropped

    def epoch_of(self, step: int) -> int:
        return step // self.steps_per_epoch

    def indices(self, step: int, worker: int) -> np.ndarray:
        """Positions (into the site's training set) of `worker`'s batch at `step`."""
        order = _epoch_order(self.num_samples, self.seed, self.epoch_of(step))
        start = (step % self.steps_per_epoch) * self.global_batch + worker * self.batch_per_worker
        return order[start : start + self.batch_per_worker]


@lru_cache(maxsize=2)
def _epoch_order(num_samples: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(num_samples)
