"""`atoll data split`: a public dataset split across N sites, written as one folder per
site, each a dataset of its own that the site's site.yaml names (`data:`).

The split is the one each site of the emulated federation derives for itself
(datasets.share_indices, from the same seeded partition spec), so a job on these folders
trains exactly as the emulated job does. Fashion-MNIST is written as it ships (IDX, raw
pixels); other datasets as npz (x, y, x_test, y_test) of the model's inputs.
"""

import gzip
import shutil
import struct
from pathlib import Path

import numpy as np
import yaml

from atoll.platform.data.datasets import (
    dataset_source,
    load_dataset,
    locate_fashion_mnist,
    share_indices,
)
from atoll.platform.data.readers import idx_file, read_idx
from atoll.platform.data.schema import DataShare, SiteData

_IDX_UBYTE = 0x08


def split_to_folders(
    dataset: str,
    data_dir: Path | None,
    sites: tuple[str, ...],
    partition: str,
    seed: int,
    out: Path,
) -> dict[str, SiteData]:
    """Write `out/<site>/` for every site; returns each site's `data:` for its site.yaml."""
    dataset_source(dataset).locate(data_dir)  # a missing dataset fails before anything is written
    specs = {}
    for index, site in enumerate(sites):
        share = DataShare(partition=partition, sites=len(sites), index=index, seed=seed)
        folder = out / site
        folder.mkdir(parents=True, exist_ok=True)
        if dataset == "fashion-mnist":
            spec = _write_idx_share(locate_fashion_mnist(data_dir), share, folder)
        else:
            spec = _write_npz_share(dataset, data_dir, share, folder)
        (folder / "data.yaml").write_text(
            yaml.safe_dump({"data": spec.model_dump(mode="json")}, sort_keys=False)
        )
        specs[site] = spec
    return specs


def _write_idx_share(source: Path, share: DataShare, folder: Path) -> SiteData:
    images = read_idx(_file(source, "train-images-idx3-ubyte"))
    labels = read_idx(_file(source, "train-labels-idx1-ubyte"))
    mine = share_indices(labels.astype(np.int64), share)
    _write_idx(folder / "train-images-idx3-ubyte.gz", images[mine])
    _write_idx(folder / "train-labels-idx1-ubyte.gz", labels[mine])
    for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        test = _file(source, stem)  # the public test set: every site evaluates on all of it
        shutil.copyfile(test, folder / test.name)
    return SiteData(format="idx", path=folder.resolve(), schema="fashion-mnist")


def _write_npz_share(
    dataset: str, data_dir: Path | None, share: DataShare, folder: Path
) -> SiteData:
    data = load_dataset(dataset, data_dir)
    mine = share_indices(data.train.y.numpy(), share)
    path = folder / "data.npz"
    np.savez(
        path,
        x=data.train.x.numpy()[mine],
        y=data.train.y.numpy()[mine],
        x_test=data.test.x.numpy(),
        y_test=data.test.y.numpy(),
    )
    return SiteData.model_validate({"format": "npz", "path": path.resolve(), "schema": dataset})


def _file(folder: Path, stem: str) -> Path:
    path = idx_file(folder, stem)
    assert path is not None, "located above"
    return path


def _write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, _IDX_UBYTE, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())
