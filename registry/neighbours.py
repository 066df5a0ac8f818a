"""Cartel's neighbour choice: rank sites by Jensen-Shannon divergence of class priors.

Plain functions over arrays, no I/O. Divergence is in bits, so it lies in
[0, 1]: 0 for identical priors, 1 for priors with no class in common.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranked:
    site_id: str
    divergence: float


def js_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence of two distributions (bits); the shorter is zero-padded."""
    return float(js_divergences(np.asarray(p, dtype=np.float64), _matrix([q]))[0])


def js_divergences(target: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Divergence of each row of `candidates` (n x c) from `target` (length <= c)."""
    width = max(target.shape[0], candidates.shape[1])
    p = _pad(target[np.newaxis, :], width)
    q = _pad(candidates, width)
    divergence: np.ndarray = np.clip(0.5 * (_kl_to_mixture(p, q) + _kl_to_mixture(q, p)), 0, 1)
    return divergence


def rank_neighbours(
    target: Sequence[float], site_ids: Sequence[str], priors: np.ndarray, k: int
) -> list[Ranked]:
    """The k sites nearest to `target`, nearest first; ties go to the smaller site id
    so that the same data always gives the same answer."""
    if k <= 0 or not site_ids:
        return []
    divergences = js_divergences(np.asarray(target, dtype=np.float64), priors)
    # Rounded for ordering: float noise (1e-17) must not decide between equal priors.
    rounded = np.round(divergences, 12)
    if k < len(site_ids):
        # Only the k smallest and whatever ties the k-th are sorted, not every site.
        kth = np.partition(rounded, k - 1)[k - 1]
        chosen = np.flatnonzero(rounded <= kth)
    else:
        chosen = np.arange(len(site_ids))
    order = sorted(chosen.tolist(), key=lambda i: (rounded[i], site_ids[i]))[:k]
    return [Ranked(site_ids[i], float(divergences[i])) for i in order]


def priors_to_bytes(priors: Sequence[float]) -> bytes:
    """The compact form stored with each site's latest report: little-endian float64."""
    return np.asarray(priors, dtype="<f8").tobytes()


def priors_from_bytes(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f8")


def stack_priors(blobs: Sequence[bytes]) -> np.ndarray:
    """One (sites x classes) matrix from stored priors, zero-padding shorter rows.

    The common case (one model signature, one class count) is a single copy,
    which keeps a neighbour query over 10,000 sites to a few milliseconds.
    """
    if not blobs:
        return np.zeros((0, 0))
    if len({len(b) for b in blobs}) == 1:
        return np.frombuffer(b"".join(blobs), dtype="<f8").reshape(len(blobs), -1)
    return _matrix([priors_from_bytes(b) for b in blobs])


def _matrix(rows: Sequence[Sequence[float] | np.ndarray]) -> np.ndarray:
    width = max((len(r) for r in rows), default=0)
    out = np.zeros((len(rows), width), dtype=np.float64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    return a if a.shape[1] == width else np.pad(a, ((0, 0), (0, width - a.shape[1])))


def _kl_to_mixture(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p || m) with m = (p + q) / 2, in bits, row by row.

    Written as p log2(2p / (p + q)) rather than p log2(p / m): halving a tiny p + q
    underflows to 0, while p + q >= p > 0 never does. Terms with p == 0 are 0 (the
    limit of p log p).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(2 * p / (p + q)), 0.0)
    sums: np.ndarray = terms.sum(axis=1)
    return sums
