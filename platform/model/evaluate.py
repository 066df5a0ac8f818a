from dataclasses import dataclass

import torch
from torch import nn

from atoll.platform.data.datasets import Dataset


@dataclass(frozen=True)
class Evaluation:
    accuracy: float
    loss: float


# A batch's activations stay under the mmap threshold that core/host_memory.py fixes at
# 32 MB (the Fashion-MNIST CNN's first layer: 13 MB at 256). At 1000 (50 MB) every batch
# was mapped and faulted in afresh: one thread took 8.2 s for the 10,000 test images
# against 3.8 s at 250.
EVAL_BATCH = 256


@torch.no_grad()
def evaluate(model: nn.Module, data: Dataset, batch_size: int = EVAL_BATCH) -> Evaluation:
    was_training = model.training
    model.eval()
    device = next(model.parameters(), torch.empty(0)).device  # none: a parameterless model
    correct, loss_sum = 0, 0.0
    for start in range(0, len(data), batch_size):
        x = data.x[start : start + batch_size].to(device)
        y = data.y[start : start + batch_size].to(device)
        logits = model(x)
        loss_sum += nn.functional.cross_entropy(logits, y, reduction="sum").item()
        correct += int((logits.argmax(1) == y).sum())
    model.train(was_training)
    n = max(len(data), 1)
    return Evaluation(correct / n, loss_sum / n)
