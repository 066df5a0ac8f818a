"""A cartel site's stream from its own data (a `data: site` job): its training set, batch
by batch, scored on its own local test split.

`stored` keeps the order of the site's files: a real site's data arrives in time order,
so that order is its drift, and online learning must meet it as it came. `shuffled`
permutes each pass with the seed, for a dump whose order means nothing. A stream longer
than the training set starts another pass over it.
"""

import numpy as np
import torch

from atoll.platform.data.datasets import Dataset
from atoll.platform.transfer.job import StreamOrder


def batch_positions(
    samples: int, batch: int, size: int, order: StreamOrder, seed: int
) -> np.ndarray:
    """Which training samples make batch `batch` (0-based): a function of the batch alone,
    so a resumed site goes on where it stopped with nothing but the batch number."""
    if samples < 1:
        raise ValueError("a stream needs at least one training sample")
    flat = np.arange(batch * size, (batch + 1) * size)
    passes, offsets = np.divmod(flat, samples)
    if order == "stored":
        return offsets
    positions = np.empty_like(offsets)
    for p in np.unique(passes):
        at = passes == p
        positions[at] = np.random.default_rng([seed, int(p)]).permutation(samples)[offsets[at]]
    return positions


class OwnStream:
    """The same two calls as the scenario streams' sampler (scenarios.StreamSampler)."""

    def __init__(self, train: Dataset, test: Dataset, order: StreamOrder, seed: int) -> None:
        self.train = train
        self.test = test
        self.order = order
        self.seed = seed

    def batch(self, index: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = torch.from_numpy(
            batch_positions(len(self.train), index, size, self.order, self.seed)
        )
        return self.train.x[chosen], self.train.y[chosen]

    def test_set(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The site's whole local test split, whatever the batch: its data has no phases."""
        return self.test.x, self.test.y
