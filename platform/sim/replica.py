"""One site in the simulator: its replica of the model and the math of a clock.

A site with K workers of batch b computes what one process with batch K*b
computes (the site tier's tested equivalence), so a replica is one model.
"""

import torch
from torch import nn

from atoll.platform.data.datasets import Dataset
from atoll.platform.model.optim import OptimizerSpec
from atoll.platform.model.zoo import build_model
from atoll.platform.site.batches import BatchPlan
from atoll.platform.site.flat import FlatModel, shifted
from atoll.platform.site.optim import ShardOptimizer, scaled_step


class SiteReplica:
    def __init__(
        self,
        model: str,
        train: Dataset,
        batch: int,
        optimizer: OptimizerSpec,
        model_seed: int,
        data_seed: int,
        total_clocks: int,
    ) -> None:
        self.train = train
        self.flat = FlatModel(build_model(model, train.input_shape, train.num_classes, model_seed))
        self.optimizer_spec = optimizer
        self.optimizer = ShardOptimizer.create(self.flat.params, optimizer)
        self.plan = BatchPlan(len(train), batch, 1, data_seed)
        self.total_clocks = total_clocks

    @property
    def params(self) -> torch.Tensor:
        return self.flat.params

    def lr_ratio(self, clock: int) -> float:
        return self.optimizer_spec.lr_at(clock, self.total_clocks) / self.optimizer_spec.lr

    def step(
        self, clock: int, scale: float, lookahead: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, float]:
        """One clock's step on this site's data; returns the change made and the loss.

        With a lookahead the gradient is taken at params + lookahead, and the
        optimizer steps from params.
        """
        index = torch.from_numpy(self.plan.indices(clock, 0))
        self.flat.zero_grad()
        with shifted(self.params, lookahead):
            loss = nn.functional.cross_entropy(
                self.flat.model(self.train.x[index]), self.train.y[index]
            )
            loss.backward()
        lr = self.optimizer_spec.lr_at(clock, self.total_clocks)
        delta = scaled_step(self.optimizer, self.flat.grads, lr, scale)
        return delta, loss.item()
