import hashlib
from collections.abc import Callable

import torch
from torch import nn

from atoll.platform.core.errors import AtollError


class SmallCNN(nn.Module):
    """Two conv blocks and two dense layers, for small images (28x28 Fashion-MNIST, 8x8 digits).

    GroupNorm, not BatchNorm: batch statistics differ from site to site under
    non-IID data and break averaging across workers and sites.
    """

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, width: int = 32) -> None:
        super().__init__()
        if len(input_shape) != 3:
            raise AtollError(f"the cnn needs C x H x W images, got input shape {input_shape}")
        channels, height, width_px = input_shape

        def block(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1),
                nn.GroupNorm(8, cout),
                nn.ReLU(),
                nn.MaxPool2d(2),
            )

        self.features = nn.Sequential(block(channels, width), block(width, 2 * width))
        flat = 2 * width * (height // 4) * (width_px // 4)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(flat, 128), nn.ReLU(), nn.Linear(128, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class MLP(nn.Module):
    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden: int = 256) -> None:
        super().__init__()
        features = 1
        for d in input_shape:
            features *= d
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden // 2),
            nn.ReLU(),
            nn.Linear(hidden // 2, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class LogReg(nn.Module):
    """Multinomial logistic regression: one row of weights and one bias per class, the
    cleanest thing for Cartel to hand from one site to another."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int) -> None:
        super().__init__()
        features = 1
        for d in input_shape:
            features *= d
        self.flatten = nn.Flatten()
        self.linear = nn.Linear(features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.flatten(x))


MODELS: dict[str, Callable[[tuple[int, ...], int], nn.Module]] = {
    "cnn": SmallCNN,
    "mlp": MLP,
    "logreg": LogReg,
}


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, seed: int) -> nn.Module:
    """The same name, shape and seed give bit-identical initial parameters in every process."""
    try:
        factory = MODELS[name]
    except KeyError:
        raise AtollError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}") from None
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        return factory(input_shape, num_classes)
    finally:
        torch.random.set_rng_state(generator_state)


def model_signature(model: nn.Module) -> str:
    """Architecture hash: parameter names and shapes, not values.

    Equal signatures mean weights can be exchanged.
    """
    text = ";".join(f"{n}:{tuple(p.shape)}" for n, p in model.named_parameters())
    return hashlib.sha256(text.encode()).hexdigest()[:16]
