"""A model whose parameters and gradients are views into two flat buffers.

Shards own slices of the flat vector, so sending a slice or stepping an optimizer
on it needs no copies: autograd accumulates straight into `grads`, and what a
shard writes into `params` is what the model computes with.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


class FlatModel:
    def __init__(self, model: nn.Module) -> None:
        self.model = model
        parameters = list(model.parameters())
        total = sum(p.numel() for p in parameters)
        device = parameters[0].device if parameters else None
        self.params = torch.empty(total, device=device)
        self.grads = torch.zeros(total, device=device)
        offset = 0
        with torch.no_grad():
            for p in parameters:
                n = p.numel()
                self.params[offset : offset + n].copy_(p.reshape(-1))
                p.data = self.params[offset : offset + n].view_as(p)
                # Autograd adds into an existing .grad in place, so it fills `grads`.
                p.grad = self.grads[offset : offset + n].view_as(p)
                offset += n

    @property
    def num_params(self) -> int:
        return self.params.numel()

    def zero_grad(self) -> None:
        # model.zero_grad() would set .grad to None and detach it from `grads`.
        self.grads.zero_()


@contextmanager
def shifted(params: torch.Tensor, offset: torch.Tensor | None) -> Iterator[None]:
    """`params` moved by `offset` (if any) inside the block, restored bit for bit after."""
    if offset is None:
        yield
        return
    saved = params.clone()
    params.add_(offset)
    try:
        yield
    finally:
        params.copy_(saved)
