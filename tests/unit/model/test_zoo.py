import pytest
import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.data.datasets import Dataset
from atoll.platform.model.evaluate import evaluate
from atoll.platform.model.names import MODEL_NAMES
from atoll.platform.model.zoo import MODELS, build_model, model_signature


@pytest.mark.parametrize("name", ["cnn", "mlp"])
@pytest.mark.parametrize("shape", [(1, 28, 28), (1, 8, 8)])
def test_models_map_images_to_class_logits(name: str, shape: tuple[int, ...]) -> None:
    model = build_model(name, shape, 10, seed=0)
    assert model(torch.zeros(3, *shape)).shape == (3, 10)


def test_the_cnn_uses_groupnorm_not_batchnorm() -> None:
    kinds = {type(m).__name__ for m in build_model("cnn", (1, 28, 28), 10, seed=0).modules()}
    assert "GroupNorm" in kinds
    assert not any("BatchNorm" in k for k in kinds)


def test_same_seed_same_weights_without_touching_the_global_generator() -> None:
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = build_model("cnn", (1, 28, 28), 10, seed=1)
    assert torch.equal(torch.rand(1), before)  # the caller's random stream is untouched
    b = build_model("cnn", (1, 28, 28), 10, seed=1)
    c = build_model("cnn", (1, 28, 28), 10, seed=2)
    pairs = list(zip(a.parameters(), b.parameters(), c.parameters(), strict=True))
    assert all(torch.equal(x, y) for x, y, _ in pairs)
    assert not all(torch.equal(x, z) for x, _, z in pairs)


def test_signature_depends_on_architecture_not_weights() -> None:
    a = build_model("cnn", (1, 28, 28), 10, seed=1)
    assert model_signature(a) == model_signature(build_model("cnn", (1, 28, 28), 10, seed=9))
    assert model_signature(a) != model_signature(build_model("cnn", (1, 28, 28), 5, seed=1))
    assert model_signature(a) != model_signature(build_model("mlp", (1, 28, 28), 10, seed=1))


def test_unknown_model_lists_the_zoo() -> None:
    with pytest.raises(AtollError, match="choose one of cnn, mlp"):
        build_model("resnet", (1, 28, 28), 10, seed=0)


def test_evaluate_counts_correct_predictions() -> None:
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Identity())  # logits = the input
    x = torch.tensor([[5.0, 0.0], [0.0, 5.0], [5.0, 0.0], [0.0, 5.0]])
    result = evaluate(model, Dataset(x, torch.tensor([0, 1, 1, 1]), ("a", "b")), batch_size=3)
    assert result.accuracy == 0.75


def test_every_model_name_a_spec_accepts_has_a_builder() -> None:
    assert set(MODELS) == set(MODEL_NAMES)
