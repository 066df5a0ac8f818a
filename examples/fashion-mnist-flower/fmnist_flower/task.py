"""fmnist_flower: the model, this device's share of the data, training and testing."""

import gzip
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

_MEAN, _STD = 0.2860, 0.3530
Dataset = tuple[torch.Tensor, torch.Tensor]  # images, labels


class Net(nn.Module):
    """A small CNN (LeNet-like) for 28x28 grey images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path) if path.suffix == ".gz" else path.open("rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def _find(folder: Path, stem: str) -> Path:
    for name in (f"{stem}.gz", stem):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"{stem}(.gz) not in {folder} (apt-get install dataset-fashion-mnist)")


_CACHE: dict[Path, np.ndarray] = {}


def _idx(folder: str, stem: str) -> np.ndarray:
    """An IDX file's array, read once per process."""
    path = _find(Path(folder), stem)
    if path not in _CACHE:
        _CACHE[path] = _read_idx(path)
    return _CACHE[path]


def partition(labels: np.ndarray, parts: int, alpha: float, seed: int) -> list[np.ndarray]:
    """Indices of each part: evenly at random (alpha 0), or Dirichlet(alpha) per class."""
    rng = np.random.default_rng(seed)
    if alpha <= 0:
        return [np.sort(p) for p in np.array_split(rng.permutation(len(labels)), parts)]
    shares: list[list[int]] = [[] for _ in range(parts)]
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cuts = (np.cumsum(rng.dirichlet([alpha] * parts)) * len(members)).astype(int)[:-1]
        for part, chunk in enumerate(np.split(members, cuts)):
            shares[part] += chunk.tolist()
    return [np.sort(np.array(s, dtype=np.int64)) for s in shares]


def load_data(partition_id: int, num_partitions: int, config: dict) -> tuple[Dataset, Dataset]:
    """This device's training and test shares (only its own images are converted)."""
    folder, seed, alpha = str(config["data-dir"]), int(config["seed"]), float(config["alpha"])
    out = []
    for kind, cap in (("train", "max-train-samples"), ("t10k", "max-test-samples")):
        labels = _idx(folder, f"{kind}-labels-idx1-ubyte")
        index = partition(labels, num_partitions, alpha, seed)[partition_id]
        if int(config[cap]) > 0:
            index = index[: int(config[cap])]
        images = _idx(folder, f"{kind}-images-idx3-ubyte")[index]
        x = (torch.from_numpy(images.astype(np.float32) / 255.0) - _MEAN) / _STD
        out.append((x.unsqueeze(1), torch.from_numpy(labels[index].astype(np.int64))))
    return out[0], out[1]


def train(
    net: nn.Module,
    data: Dataset,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
) -> float:
    """Local SGD; the mean training loss."""
    x, y = data
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    net.train()
    total, batches = 0.0, 0
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y), batch_size):
            batch = order[start : start + batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x[batch]), y[batch])
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
    return total / max(batches, 1)


def test(net: nn.Module, data: Dataset) -> tuple[float, float]:
    """Loss and accuracy on `data`."""
    x, y = data
    net.eval()
    with torch.no_grad():
        logits = net(x)
        loss = F.cross_entropy(logits, y).item()
        accuracy = (logits.argmax(1) == y).float().mean().item()
    return loss, accuracy
