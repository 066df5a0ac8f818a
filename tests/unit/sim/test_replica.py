"""A simulated site's clock: one optimizer step on its own data."""

import torch
from torch import nn

from atoll.platform.data.datasets import load_dataset
from atoll.platform.model.optim import OptimizerSpec
from atoll.platform.model.zoo import build_model
from atoll.platform.sim.replica import SiteReplica
from atoll.platform.site.flat import FlatModel


def test_a_lookahead_moves_where_the_gradient_is_taken_not_where_the_step_starts() -> None:
    train = load_dataset("digits").train
    spec = OptimizerSpec(lr=0.1, momentum=0.0)
    replica = SiteReplica("cnn", train, 16, spec, model_seed=0, data_seed=0, total_clocks=10)
    start = replica.params.clone()
    lookahead = torch.randn(len(start), generator=torch.Generator().manual_seed(1)) * 0.05
    delta, _ = replica.step(0, 0.5, lookahead)

    reference = FlatModel(build_model("cnn", train.input_shape, train.num_classes, seed=0))
    reference.params.copy_(start + lookahead)
    index = torch.from_numpy(replica.plan.indices(0, 0))
    nn.functional.cross_entropy(reference.model(train.x[index]), train.y[index]).backward()

    torch.testing.assert_close(delta, -0.1 * 0.5 * reference.grads, rtol=1e-4, atol=1e-7)
    torch.testing.assert_close(replica.params, start + delta, rtol=0, atol=1e-7)
