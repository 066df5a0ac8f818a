"""A site's own data: the three formats, the errors (one line naming the file and the
problem), and `atoll data split`'s folders, which train exactly as the emulated share."""

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from unit.data.test_datasets import fake_fashion_mnist, write_idx

from atoll.platform.data.datasets import load_share, load_site_data
from atoll.platform.data.readers import DataError, read_site_data
from atoll.platform.data.schema import SCHEMAS, DataSchema, DataShare, SiteData
from atoll.platform.data.split import split_to_folders

TINY = DataSchema(input_shape=(1, 2, 2), classes=("a", "b", "c"))


def spec(fmt: str, path: Path, test_path: Path | None = None, schema=TINY) -> SiteData:
    return SiteData.model_validate(
        {"format": fmt, "path": path, "test_path": test_path, "schema": schema}
    )


def write_npz(path: Path, x: np.ndarray, y: np.ndarray, **more: np.ndarray) -> Path:
    np.savez(path, x=x, y=y, **more)
    return path


def good_npz(path: Path) -> Path:
    x = np.arange(4 * 4, dtype=np.uint8).reshape(4, 2, 2)
    return write_npz(path, x, np.array([0, 1, 2, 1]), x_test=x[:2], y_test=np.array([2, 0]))


def test_npz_and_its_report(tmp_path: Path) -> None:
    data = read_site_data(spec("npz", good_npz(tmp_path / "d.npz")))
    assert data.train.x.shape == (4, 1, 2, 2) and data.train.x.dtype == np.float32
    assert data.train.x.max() == pytest.approx(15 / 255)
    report = data.report()
    assert (report.samples, report.class_counts, report.test_samples) == (4, (1, 2, 1), 2)


def test_image_folders_one_per_class(tmp_path: Path) -> None:
    for root, n in ((tmp_path / "train", 2), (tmp_path / "test", 1)):
        for label in ("a", "c"):
            (root / label).mkdir(parents=True)
            for i in range(n):
                Image.fromarray(np.full((2, 2), 10 * i, np.uint8)).save(root / label / f"{i}.png")
    data = read_site_data(spec("folder", tmp_path / "train", tmp_path / "test"))
    assert data.report().class_counts == (2, 0, 2)
    assert data.test.x.shape == (2, 1, 2, 2)


def test_idx_folder(tmp_path: Path) -> None:
    fake_fashion_mnist(tmp_path, n_train=6, n_test=3)
    data = read_site_data(spec("idx", tmp_path, schema="fashion-mnist"))
    assert (len(data.train), len(data.test)) == (6, 3)


def bad_cases(tmp_path: Path) -> list[tuple[SiteData, str, Path]]:
    """(spec, what the error says, the file it names)"""
    good = good_npz(tmp_path / "good.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip archive")
    x = np.zeros((3, 2, 2), np.uint8)
    shape = write_npz(tmp_path / "shape.npz", np.zeros((3, 3, 3), np.uint8), np.zeros(3, int))
    label = write_npz(tmp_path / "label.npz", x, np.array([0, 1, 7]))
    negative = write_npz(tmp_path / "negative.npz", x, np.array([0, -1, 1]))
    no_y = tmp_path / "no_y.npz"
    np.savez(no_y, x=x)
    unknown = tmp_path / "classes"
    (unknown / "zebra").mkdir(parents=True)
    idx = tmp_path / "idx"
    idx.mkdir()
    write_idx(idx / "train-images-idx3-ubyte", np.zeros((3, 2, 2)))
    return [
        (spec("npz", tmp_path / "gone.npz"), "missing", tmp_path / "gone.npz"),
        (spec("npz", junk), "unreadable", junk),
        (spec("npz", shape), "inputs of shape 3x3, the schema says 1x2x2", shape),
        (spec("npz", label), "label 7 is outside the schema's 3 classes", label),
        (spec("npz", negative), "label -1 is outside", negative),
        (spec("npz", no_y), "no array y", no_y),
        (spec("npz", good, tmp_path / "nope.npz"), "missing", tmp_path / "nope.npz"),
        (spec("folder", unknown, unknown), "not one of the schema's classes", unknown / "zebra"),
        (spec("idx", idx), "missing", idx / "train-labels-idx1-ubyte"),
        (spec("idx", good), "not a folder", good),
    ]


def test_bad_data_is_one_line_naming_the_file_and_the_problem(tmp_path: Path) -> None:
    for data, problem, file in bad_cases(tmp_path):
        with pytest.raises(DataError) as caught:
            read_site_data(data)
        message = str(caught.value)
        assert problem in message, (data, message)
        assert str(file) in message, (data, message)
        assert "\n" not in message


@pytest.mark.parametrize("dataset", ["fashion-mnist", "digits"])
def test_a_split_folder_is_exactly_the_emulated_share(tmp_path: Path, dataset: str) -> None:
    source = fake_fashion_mnist(tmp_path / "public" / "fashion-mnist", n_train=60, n_test=5)
    sites = ("x", "y", "z")
    written = split_to_folders(dataset, source, sites, "dirichlet:0.5", 3, tmp_path / "out")
    for index, site in enumerate(sites):
        own = load_site_data(written[site])
        share = DataShare(partition="dirichlet:0.5", sites=3, index=index, seed=3)
        emulated = load_share(dataset, source, share)
        assert torch.equal(own.train.x, emulated.train.x)
        assert torch.equal(own.train.y, emulated.train.y)
        assert torch.equal(own.test.x, emulated.test.x)
        assert own.train.classes == SCHEMAS[dataset].classes
    assert sum(len(load_site_data(d).train) for d in written.values()) == (
        60 if dataset == "fashion-mnist" else 1437
    )
