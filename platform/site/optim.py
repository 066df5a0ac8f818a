"""The optimizer a shard applies to its slice (model/optim.py has its spec).

Both optimizers are element-wise, so stepping each shard's slice separately is
the same computation as stepping the whole model in one process.
"""

from dataclasses import dataclass

import torch

from atoll.platform.model.optim import OptimizerSpec


def build_optimizer(spec: OptimizerSpec, params: list[torch.Tensor]) -> torch.optim.Optimizer:
    # foreach=False: the single-tensor path, identical in a shard and in one process.
    if spec.name == "adam":
        return torch.optim.Adam(params, lr=spec.lr, weight_decay=spec.weight_decay, foreach=False)
    return torch.optim.SGD(
        params,
        lr=spec.lr,
        momentum=spec.momentum,
        weight_decay=spec.weight_decay,
        foreach=False,
    )


@dataclass
class ShardOptimizer:
    """One shard's slice of the parameters and the optimizer state that goes with it."""

    param: torch.Tensor
    optimizer: torch.optim.Optimizer

    @classmethod
    def create(cls, param: torch.Tensor, spec: OptimizerSpec) -> "ShardOptimizer":
        return cls(param, build_optimizer(spec, [param]))

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
