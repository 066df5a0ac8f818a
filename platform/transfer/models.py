"""The two online models a cartel site trains, and the part each hands out.

logreg: the part is the classifier rows (weights and bias) of the asked classes.
cnn: the part is the head: the output rows of the asked classes plus the hidden
dense layer before them (whole). Test, then train: each batch is scored by the
model as it was, then trained on (prequential evaluation, as in Cartel).
"""

import numpy as np
import torch
from torch import nn

from atoll.platform.model.zoo import build_model, model_signature
from atoll.platform.transfer.core import CartelSite
from atoll.platform.transfer.parts import ModelPart, merge_part

# The arrays of each model's part: (row arrays, whole arrays).
PART_ARRAYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "logreg": (("linear.weight", "linear.bias"), ()),
    "cnn": (
        ("classifier.3.weight", "classifier.3.bias"),
        ("classifier.1.weight", "classifier.1.bias"),
    ),
}
LEARNING_RATES = {"logreg": 0.01, "cnn": 0.05}


class OnlineModel:
    def __init__(
        self, name: str, input_shape: tuple[int, ...], num_classes: int, seed: int
    ) -> None:
        if name not in PART_ARRAYS:
            raise ValueError(f"cartel trains {', '.join(PART_ARRAYS)}, not {name!r}")
        self.name = name
        self.num_classes = num_classes
        self.module: nn.Module = build_model(name, input_shape, num_classes, seed)
        self.optimizer = torch.optim.SGD(self.module.parameters(), lr=LEARNING_RATES[name])
        self.signature = f"{name}:{model_signature(self.module)}"
        self.kind = "rows" if name == "logreg" else "head"
        self.last_loss = float("nan")  # of the latest batch trained on

    def score_then_train(self, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
        """Which samples the model got right before it trained on them."""
        self.module.train()
        logits = self.module(x)
        correct = (logits.argmax(dim=1) == y).numpy()
        loss = nn.functional.cross_entropy(logits, y)
        self.last_loss = loss.item()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return np.asarray(correct, dtype=bool)

    def train(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.score_then_train(x, y)

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        self.module.eval()
        return self.module(x).argmax(dim=1)

    def evaluate(self, x: torch.Tensor, y: torch.Tensor) -> float:
        return float((self.predict(x) == y).float().mean())

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: p.detach().numpy().copy() for n, p in self.module.named_parameters()}

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {n: tuple(p.shape) for n, p in self.module.named_parameters()}

    @torch.no_grad()
    def load(self, arrays: dict[str, np.ndarray]) -> None:
        params = dict(self.module.named_parameters())
        for name, value in arrays.items():
            params[name].copy_(torch.from_numpy(value))

    def merge(self, part: ModelPart, site: CartelSite) -> None:
        """Take in a neighbour's part, weighted by the site's own class counts and merged
        by its configured policy (`merge_part`)."""
        merged = merge_part(
            self.arrays(), part, list(site.class_samples), site.samples, site.config.merge
        )
        self.load(merged)

    def size_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for p in self.module.parameters())

    def part(
        self,
        source: str,
        version: int,
        classes: tuple[int, ...],
        class_samples: np.ndarray,
        samples: int,
    ) -> ModelPart:
        rows, whole = PART_ARRAYS[self.name]
        own = self.arrays()
        arrays = {n: own[n][list(classes)].copy() for n in rows}
        arrays.update({n: own[n] for n in whole})
        return ModelPart(
            source=source,
            source_version=version,
            signature=self.signature,
            kind=self.kind,
            classes=classes,
            arrays=arrays,
            row_arrays=frozenset(rows),
            class_samples=tuple(int(class_samples[c]) for c in classes),
            samples=samples,
        )
