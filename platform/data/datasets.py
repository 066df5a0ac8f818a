"""Datasets held in memory as tensors, read from files that packages install.

No loader downloads anything: Atoll runs where the internet is out of reach, so a
missing file is an error that says which package provides it.
"""

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from atoll.platform.core.config import settings
from atoll.platform.core.errors import AtollError
from atoll.platform.data.partition import PartitionSpec, partition_dataset
from atoll.platform.data.readers import Arrays, idx_file, read_idx, read_site_data, to_inputs
from atoll.platform.data.schema import SCHEMAS, DataShare, SiteData

FASHION_MNIST = SCHEMAS["fashion-mnist"]
FASHION_MNIST_CLASSES = FASHION_MNIST.classes


@dataclass(frozen=True)
class Dataset:
    """Inputs `x` (float32, N x C x H x W or N x F) and labels `y` (int64, N)."""

    x: torch.Tensor
    y: torch.Tensor
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(f"{len(self.x)} inputs but {len(self.y)} labels")

    def __len__(self) -> int:
        return len(self.y)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])

    def class_counts(self) -> torch.Tensor:
        """Samples per class (int64, one per class)."""
        return torch.bincount(self.y, minlength=self.num_classes)

    def subset(self, indices: np.ndarray | torch.Tensor) -> "Dataset":
        index = torch.as_tensor(indices, dtype=torch.long)
        return Dataset(self.x[index], self.y[index], self.classes)

    def sample(self, count: int, seed: int) -> "Dataset":
        """`count` samples drawn without replacement, the same ones for the same seed."""
        if count >= len(self):
            return self
        return self.subset(np.sort(np.random.default_rng(seed).permutation(len(self))[:count]))


@dataclass(frozen=True)
class TrainTest:
    name: str
    train: Dataset
    test: Dataset


_FASHION_MNIST_FILES = tuple(
    f"{split}-{kind}-idx{dims}-ubyte"
    for split in ("train", "t10k")
    for kind, dims in (("images", 3), ("labels", 1))
)


def locate_fashion_mnist(data_dir: Path | None) -> Path:
    """The folder holding the four IDX files: `data_dir` itself or its fashion-mnist/."""
    root = data_dir or settings().data_dir
    for folder in (root / "fashion-mnist", root):
        if all(idx_file(folder, stem) for stem in _FASHION_MNIST_FILES):
            return folder
    raise AtollError(
        f"Fashion-MNIST not found in {root} (looked for {_FASHION_MNIST_FILES[0]}.gz and its "
        "three siblings); install it with `apt-get install -y dataset-fashion-mnist`, or point "
        "--data-dir / ATOLL_DATA_DIR at a folder that holds it"
    )


def _idx_file(folder: Path, stem: str) -> Path:
    path = idx_file(folder, stem)
    if path is None:
        raise AtollError(f"{folder} holds no {stem} (nor {stem}.gz)")
    return path


def read_fashion_mnist(folder: Path) -> TrainTest:
    def split(prefix: str) -> Dataset:
        images = read_idx(_idx_file(folder, f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(_idx_file(folder, f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise AtollError(f"Fashion-MNIST files in {folder} do not match each other")
        # The same conversion as a site's own IDX files get: a split written to folders
        # trains exactly as the emulated share does.
        x = to_inputs(images, FASHION_MNIST, folder)
        return Dataset(
            torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64)), FASHION_MNIST_CLASSES
        )

    return TrainTest("fashion-mnist", split("train"), split("t10k"))


def locate_digits(data_dir: Path | None) -> Path:
    """scikit-learn's 8x8 digits ship inside the package; `data_dir` does not apply."""
    del data_dir
    # Read the package's own CSV rather than import sklearn.datasets, which takes
    # over a second in every rank that starts.
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        csv = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if csv.is_file():
            return csv
    raise AtollError("the digits dataset comes with scikit-learn: `pip install scikit-learn`")


def read_digits(csv: Path) -> TrainTest:
    table = np.loadtxt(csv, delimiter=",", dtype=np.float32)
    x = torch.from_numpy(table[:, :64].reshape(-1, 1, 8, 8) / 16.0 - 0.5)
    y = torch.from_numpy(table[:, 64].astype(np.int64))
    # A fixed, seeded 80/20 split so every run tests on the same images.
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(y)))
    cut = int(0.8 * len(y))
    classes = tuple(str(d) for d in range(10))
    train, test = order[:cut], order[cut:]
    return TrainTest(
        "digits", Dataset(x[train], y[train], classes), Dataset(x[test], y[test], classes)
    )


@dataclass(frozen=True)
class DatasetSource:
    """Where a dataset's files are (cheap, checked before anything starts) and how to read them."""

    locate: Callable[[Path | None], Path]
    read: Callable[[Path], TrainTest]


DATASETS: dict[str, DatasetSource] = {
    "fashion-mnist": DatasetSource(locate_fashion_mnist, read_fashion_mnist),
    "digits": DatasetSource(locate_digits, read_digits),
}


def dataset_source(name: str) -> DatasetSource:
    try:
        return DATASETS[name]
    except KeyError:
        raise AtollError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}") from None


def check_dataset(name: str, data_dir: Path | None = None) -> None:
    """Raise the error a load would raise, without reading the data."""
    dataset_source(name).locate(data_dir)


def load_dataset(name: str, data_dir: Path | None = None) -> TrainTest:
    source = dataset_source(name)
    return source.read(source.locate(data_dir))


def share_indices(labels: np.ndarray, share: DataShare) -> np.ndarray:
    """The positions of a site's share in the training set: every site computes the whole
    seeded split from the same labels and keeps its own part."""
    split = partition_dataset(labels, share.sites, PartitionSpec.parse(share.partition), share.seed)
    return split.sites[share.index].indices


def load_share(name: str, data_dir: Path | None, share: DataShare | None) -> TrainTest:
    """A public dataset, or a site's share of its training set (the test set is whole)."""
    data = load_dataset(name, data_dir)
    if share is None:
        return data
    train = data.train.subset(share_indices(data.train.y.numpy(), share))
    return TrainTest(data.name, train, data.test)


def _dataset(arrays: Arrays, classes: tuple[str, ...]) -> Dataset:
    return Dataset(torch.from_numpy(arrays.x), torch.from_numpy(arrays.y), classes)


def load_site_data(spec: SiteData) -> TrainTest:
    """A site's own data (site.yaml's `data:`)."""
    arrays = read_site_data(spec)
    classes = arrays.schema.classes
    return TrainTest(
        str(spec.path), _dataset(arrays.train, classes), _dataset(arrays.test, classes)
    )
