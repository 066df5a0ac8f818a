"""The plain single-process PyTorch loop a site is measured against.

No flat buffers, no shards, no process group: `model.parameters()` and a stock
optimizer. Tests check that a K-worker site computes what this computes with
batch K*b; the overhead benchmark times both.
"""

import time
from dataclasses import dataclass

import torch
from torch import nn

from atoll.platform.data.datasets import Dataset
from atoll.platform.model.zoo import build_model
from atoll.platform.site.batches import BatchPlan
from atoll.platform.site.optim import build_optimizer
from atoll.platform.site.spec import SiteJob


@dataclass
class ReferenceRun:
    model: nn.Module
    steps: int
    train_s: float
    # time.monotonic() at the start and at the end of every step (system-wide on Linux, so
    # two processes' loops can be laid side by side)
    step_ends: list[float]

    @property
    def step_s(self) -> float:
        return self.train_s / self.steps

    def samples_per_s(self, batch: int) -> float:
        return self.steps * batch / self.train_s


def train_single_process(job: SiteJob, train: Dataset, steps: int) -> ReferenceRun:
    """`steps` steps with batch `workers * batch_size` over the samples the site would use."""
    model = build_model(job.model, train.input_shape, train.num_classes, job.seed)
    optimizer = build_optimizer(job.optimizer, list(model.parameters()))
    plan = BatchPlan(len(train), job.batch_size * job.workers, 1, job.seed)
    start = time.perf_counter()
    step_ends = [time.monotonic()]
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = job.optimizer.lr_at(step, steps)
        index = torch.from_numpy(plan.indices(step, 0))
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(train.x[index]), train.y[index]).backward()
        optimizer.step()
        step_ends.append(time.monotonic())
    return ReferenceRun(model, steps, time.perf_counter() - start, step_ends)
