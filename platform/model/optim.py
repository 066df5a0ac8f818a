"""Which optimizer trains a model, and its learning-rate schedule.

Both tiers use it: a site's shards step with it (platform/site/optim.py) and a geo job
names it (platform/geo/job.py).
"""

import math
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field


class OptimizerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Literal["sgd", "adam"] = "sgd"
    lr: float = Field(0.05, gt=0)
    momentum: float = Field(0.9, ge=0, lt=1)  # sgd only
    weight_decay: float = Field(0.0, ge=0)
    schedule: Literal["constant", "cosine"] = "constant"

    def build(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        # foreach=False: the single-tensor path, identical in a shard and in one process.
        if self.name == "adam":
            return torch.optim.Adam(
                params, lr=self.lr, weight_decay=self.weight_decay, foreach=False
            )
        return torch.optim.SGD(
            params,
            lr=self.lr,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            foreach=False,
        )

    def lr_at(self, step: int, total_steps: int) -> float:
        """Learning rate at `step` (0-based): a function of the step, so resume needs no state."""
        if self.schedule == "cosine" and total_steps > 0:
            return 0.5 * self.lr * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))
        return self.lr
