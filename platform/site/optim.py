"""The optimizer a shard applies to its slice, and the learning-rate schedule.

Both optimizers are element-wise, so stepping each shard's slice separately is
the same computation as stepping the whole model in one process.
"""

import math
from dataclasses import dataclass
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


@dataclass
class ShardOptimizer:
    """One shard's slice of the parameters and the optimizer state that goes with it."""

    param: torch.Tensor
    optimizer: torch.optim.Optimizer

    @classmethod
    def create(cls, param: torch.Tensor, spec: OptimizerSpec) -> "ShardOptimizer":
        return cls(param, spec.build([param]))

    def step(self, grad: torch.Tensor, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.param.grad = grad
        self.optimizer.step()
        self.param.grad = None


def scaled_step(shard: ShardOptimizer, grad: torch.Tensor, lr: float, scale: float) -> torch.Tensor:
    """Step, then keep `scale` of the change; returns the change kept.

    Scaling the change rather than the gradient keeps the meaning for Adam, whose
    step ignores a gradient's scale; for SGD with momentum the two are the same.
    """
    before = shard.param.clone()
    shard.step(grad, lr)
    delta = shard.param - before
    if scale != 1.0:
        delta *= scale
        shard.param.copy_(before + delta)
    return delta
