import gzip
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.data.datasets import DATASETS, load_dataset
from atoll.platform.data.names import DATASET_NAMES
from atoll.platform.data.readers import read_idx


def write_idx(path: Path, array: np.ndarray, compress: bool = True) -> Path:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if compress:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def fake_fashion_mnist(folder: Path, n_train: int = 20, n_test: int = 10) -> Path:
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        write_idx(folder / f"{prefix}-images-idx3-ubyte", rng.integers(0, 256, (n, 28, 28)))
        write_idx(folder / f"{prefix}-labels-idx1-ubyte", rng.integers(0, 10, n))
    return folder


@pytest.mark.parametrize("compress", [True, False])
def test_read_idx_round_trips(tmp_path: Path, compress: bool) -> None:
    array = np.arange(24).reshape(2, 3, 4)
    assert np.array_equal(read_idx(write_idx(tmp_path / "a", array, compress)), array)


def test_truncated_idx_is_a_clear_error(tmp_path: Path) -> None:
    path = write_idx(tmp_path / "a", np.zeros((4, 28, 28)), compress=False)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(AtollError, match="truncated or corrupt"):
        read_idx(path)


def test_not_an_idx_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk"
    path.write_bytes(b"hello world")
    with pytest.raises(AtollError, match="not an IDX file"):
        read_idx(path)


def test_missing_fashion_mnist_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(AtollError, match="apt-get install -y dataset-fashion-mnist"):
        load_dataset("fashion-mnist", tmp_path)


def test_data_dir_may_be_the_root_or_the_dataset_folder(tmp_path: Path) -> None:
    fake_fashion_mnist(tmp_path / "fashion-mnist")
    for folder in (tmp_path, tmp_path / "fashion-mnist"):
        data = load_dataset("fashion-mnist", folder)
        assert data.train.x.shape == (20, 1, 28, 28)
        assert len(data.test) == 10


def test_environment_variable_sets_the_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_fashion_mnist(tmp_path / "fashion-mnist", n_train=7)
    monkeypatch.setenv("ATOLL_DATA_DIR", str(tmp_path))
    assert len(load_dataset("fashion-mnist").train) == 7


def test_unknown_dataset_lists_the_known_ones() -> None:
    with pytest.raises(AtollError, match="fashion-mnist, digits"):
        load_dataset("imagenet")


def test_digits_is_split_the_same_way_every_time() -> None:
    a, b = load_dataset("digits"), load_dataset("digits")
    assert a.train.x.shape == (1437, 1, 8, 8)
    assert len(a.test) == 360
    assert torch.equal(a.test.y, b.test.y)
    assert torch.equal(a.train.x, b.train.x)
    assert a.train.num_classes == 10


def test_real_fashion_mnist_has_its_documented_shape(fashion_mnist: Path) -> None:
    data = load_dataset("fashion-mnist", fashion_mnist)
    assert data.train.x.shape == (60000, 1, 28, 28)
    assert data.train.x.dtype == torch.float32
    assert data.test.x.shape == (10000, 1, 28, 28)
    assert torch.bincount(data.train.y).tolist() == [6000] * 10
    # Normalised with the training set's statistics: mean ~0, std ~1.
    assert abs(float(data.train.x.mean())) < 0.01
    assert abs(float(data.train.x.std()) - 1) < 0.01


def test_every_dataset_name_a_spec_accepts_has_a_loader() -> None:
    assert set(DATASETS) == set(DATASET_NAMES)
