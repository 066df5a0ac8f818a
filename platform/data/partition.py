"""Seeded, reproducible splits of a training set across N sites.

`iid` shuffles and deals evenly; `label-skew:C` gives each site C classes;
`dirichlet:ALPHA` draws each class's share per site from Dir(ALPHA), the usual
non-IID benchmark (smaller ALPHA, more skew).
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np

from atoll.platform.core.errors import AtollError

PartitionKind = Literal["iid", "label-skew", "dirichlet"]
_DIRICHLET_TRIES = 100


@dataclass(frozen=True)
class PartitionSpec:
    kind: PartitionKind
    classes_per_site: int = 0
    alpha: float = 0.0

    @classmethod
    def parse(cls, text: str) -> "PartitionSpec":
        """`iid`, `label-skew:C` or `dirichlet:ALPHA`."""
        kind, _, arg = text.strip().partition(":")
        try:
            if kind == "iid" and not arg:
                return cls("iid")
            if kind == "label-skew" and arg:
                classes = int(arg)
                if classes >= 1:
                    return cls("label-skew", classes_per_site=classes)
            if kind == "dirichlet" and arg:
                alpha = float(arg)
                if alpha > 0 and np.isfinite(alpha):
                    return cls("dirichlet", alpha=alpha)
        except ValueError:
            pass
        raise AtollError(
            f"bad partition {text!r}: use iid, label-skew:C (C >= 1 classes per site) "
            "or dirichlet:ALPHA (ALPHA > 0)"
        )

    def __str__(self) -> str:
        if self.kind == "label-skew":
            return f"label-skew:{self.classes_per_site}"
        if self.kind == "dirichlet":
            return f"dirichlet:{self.alpha:g}"
        return "iid"


@dataclass(frozen=True)
class SitePartition:
    indices: np.ndarray  # into the training set, sorted
    class_counts: np.ndarray  # samples per class at this site

    @property
    def samples(self) -> int:
        return len(self.indices)


@dataclass(frozen=True)
class Partition:
    spec: PartitionSpec
    seed: int
    sites: tuple[SitePartition, ...]

    def summary(self) -> list[dict]:
        """Per site: sample count and class histogram (JSON-ready)."""
        return [
            {"site": i, "samples": s.samples, "class_counts": s.class_counts.tolist()}
            for i, s in enumerate(self.sites)
        ]


def partition_dataset(
    labels: np.ndarray, num_sites: int, spec: PartitionSpec, seed: int, min_samples: int = 1
) -> Partition:
    labels = np.asarray(labels)
    if num_sites < 1:
        raise AtollError(f"need at least 1 site, got {num_sites}")
    num_classes = int(labels.max()) + 1 if len(labels) else 0
    if len(labels) < num_sites * min_samples:
        raise AtollError(f"{len(labels)} samples cannot give {num_sites} sites {min_samples} each")
    rng = np.random.default_rng(seed)
    if spec.kind == "iid":
        shares = np.array_split(rng.permutation(len(labels)), num_sites)
    elif spec.kind == "label-skew":
        shares = _label_skew(labels, num_sites, num_classes, spec.classes_per_site, rng)
    else:
        shares = _dirichlet(labels, num_sites, num_classes, spec.alpha, min_samples, rng)
    sites = []
    for i, share in enumerate(shares):
        if len(share) < min_samples:
            raise AtollError(f"partition {spec} leaves site {i} with {len(share)} samples")
        indices = np.sort(np.asarray(share, dtype=np.int64))
        counts = np.bincount(labels[indices], minlength=num_classes)
        sites.append(SitePartition(indices, counts))
    return Partition(spec, seed, tuple(sites))


def _label_skew(
    labels: np.ndarray, num_sites: int, num_classes: int, per_site: int, rng: np.random.Generator
) -> list[np.ndarray]:
    if per_site > num_classes:
        raise AtollError(
            f"label-skew:{per_site} asks for more classes than the {num_classes} there are"
        )
    # Deal classes round-robin from a seeded order, so every class is held by some
    # site whenever num_sites * per_site >= num_classes, and each site's are distinct.
    order = rng.permutation(num_classes)
    holders: list[list[int]] = [[] for _ in range(num_classes)]
    for site in range(num_sites):
        for j in range(per_site):
            holders[order[(site * per_site + j) % num_classes]].append(site)
    shares: list[list[np.ndarray]] = [[] for _ in range(num_sites)]
    for cls, sites in enumerate(holders):
        if not sites:
            continue
        members = rng.permutation(np.flatnonzero(labels == cls))
        for site, part in zip(sites, np.array_split(members, len(sites)), strict=True):
            shares[site].append(part)
    return [np.concatenate(parts) if parts else np.empty(0, np.int64) for parts in shares]


def _dirichlet(
    labels: np.ndarray,
    num_sites: int,
    num_classes: int,
    alpha: float,
    min_samples: int,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    by_class = [rng.permutation(np.flatnonzero(labels == c)) for c in range(num_classes)]
    for _ in range(_DIRICHLET_TRIES):
        shares: list[list[np.ndarray]] = [[] for _ in range(num_sites)]
        for members in by_class:
            proportions = rng.dirichlet(np.full(num_sites, alpha))
            cuts = (np.cumsum(proportions)[:-1] * len(members)).astype(int)
            for site, part in enumerate(np.split(members, cuts)):
                shares[site].append(part)
        merged = [np.concatenate(parts) for parts in shares]
        if min(len(m) for m in merged) >= min_samples:
            return merged
    raise AtollError(
        f"dirichlet:{alpha:g} left some site with fewer than {min_samples} samples in "
        f"{_DIRICHLET_TRIES} draws; use a larger alpha or fewer sites"
    )
