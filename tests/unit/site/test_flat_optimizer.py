"""A model stepped slice by slice through flat buffers computes what a stock
optimizer computes on model.parameters(): the basis of the site's correctness."""

import pytest
import torch
from torch import nn

from atoll.platform.model.optim import OptimizerSpec
from atoll.platform.model.zoo import build_model
from atoll.platform.site.flat import FlatModel, shifted
from atoll.platform.site.layout import SiteLayout
from atoll.platform.site.optim import ShardOptimizer, build_optimizer


def test_parameters_and_gradients_are_views_of_the_flat_buffers() -> None:
    flat = FlatModel(build_model("mlp", (1, 8, 8), 10, seed=0))
    nn.functional.cross_entropy(
        flat.model(torch.randn(4, 1, 8, 8)), torch.tensor([0, 1, 2, 3])
    ).backward()
    total = sum(float(p.grad.abs().sum()) for p in flat.model.parameters())
    assert total > 0
    assert float(flat.grads.abs().sum()) == pytest.approx(total, rel=1e-05)
    flat.params.zero_()
    assert all(float(p.detach().abs().sum()) == 0 for p in flat.model.parameters())
    flat.zero_grad()
    assert all(float(p.grad.abs().sum()) == 0 for p in flat.model.parameters())


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_stepping_shard_slices_equals_stepping_the_whole_model(name: str) -> None:
    spec = OptimizerSpec(name=name, lr=0.01, weight_decay=1e-4)
    reference = build_model("cnn", (1, 8, 8), 10, seed=3)
    stock = build_optimizer(spec, list(reference.parameters()))
    flat = FlatModel(build_model("cnn", (1, 8, 8), 10, seed=3))
    layout = SiteLayout(workers=1, shards=3)
    shards = []
    for s in range(3):
        start, end = layout.bounds(s, flat.num_params)
        shards.append((start, end, ShardOptimizer.create(flat.params[start:end], spec)))
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    for _ in range(5):
        stock.zero_grad()
        nn.functional.cross_entropy(reference(x), y).backward()
        stock.step()
        flat.zero_grad()
        nn.functional.cross_entropy(flat.model(x), y).backward()
        for start, end, shard in shards:
            shard.step(flat.grads[start:end].clone(), spec.lr)
    expected = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    assert torch.allclose(flat.params, expected, atol=1e-6)


def test_cosine_schedule_starts_at_lr_and_ends_at_zero() -> None:
    spec = OptimizerSpec(lr=0.1, schedule="cosine")
    assert spec.lr_at(0, 100) == pytest.approx(0.1)
    assert spec.lr_at(50, 100) == pytest.approx(0.05)
    assert spec.lr_at(100, 100) == pytest.approx(0.0)
    assert OptimizerSpec(lr=0.1).lr_at(99, 100) == 0.1


def test_shifted_moves_params_inside_the_block_and_restores_them_bit_for_bit() -> None:
    params = torch.randn(100)
    before = params.clone()
    offset = torch.randn(100) * 1e-3
    with shifted(params, offset):
        assert torch.equal(params, before + offset)
    assert torch.equal(params, before)  # not params + offset - offset, which rounds
    with pytest.raises(RuntimeError), shifted(params, offset):
        raise RuntimeError("the gradient failed")
    assert torch.equal(params, before)
    with shifted(params, None):
        assert torch.equal(params, before)
