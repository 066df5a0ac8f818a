"""Cartel's neighbour choice: rank sites by Jensen-Shannon divergence of class priors.

Plain functions over arrays, no I/O. Divergence is in bits, so it lies in
[0, 1]: 0 for identical priors, 1 for priors with no class in common.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_SMALLEST = np.nextafter(0.0, 1.0)
_SMALLEST_32 = np.nextafter(np.float32(0.0), np.float32(1.0))
_EPSILON_32 = float(np.finfo(np.float32).eps)


@dataclass(frozen=True)
class Ranked:
    site_id: str
    divergence: float


def js_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence of two distributions (bits); the shorter is zero-padded."""
    return float(js_divergences(np.asarray(p, dtype=np.float64), _matrix([q]))[0])


def js_divergences(
    target: np.ndarray, candidates: np.ndarray, candidate_terms: np.ndarray | None = None
) -> np.ndarray:
    """Divergence of each row of `candidates` (n x c) from `target` (length <= c).

    With m = (p + q) / 2 and t(x) = sum x log2 x + sum x (`self_terms`),
    JSD(p, q) = (t(p) + t(q) - sum (p + q) log2 (p + q)) / 2: one logarithm per entry
    rather than two, and a candidate's t(q) can be kept from one query to the next
    (`candidate_terms`, as `self_terms(candidates)` gives them). Only sums of x log2 x
    appear, never a quotient, so a vanishing probability cannot underflow into a false
    "disjoint".
    """
    width = max(target.shape[0], candidates.shape[1])
    p = _pad(target[np.newaxis, :], width)
    q = _pad(candidates, width)
    if candidate_terms is None:  # (zero columns padded on change no row's terms)
        candidate_terms = self_terms(q)
    mixed = _x_log2_x(q + p)
    divergence: np.ndarray = np.clip(0.5 * (self_terms(p) + candidate_terms - mixed), 0, 1)
    return divergence


def self_terms(rows: np.ndarray) -> np.ndarray:
    """sum x log2 x + sum x of each row: its part of a Jensen-Shannon divergence."""
    terms: np.ndarray = _x_log2_x(rows) + rows.sum(axis=1)
    return terms


def rank_neighbours(
    target: Sequence[float], site_ids: Sequence[str], priors: np.ndarray, k: int
) -> list[Ranked]:
    """The k sites nearest to `target`, nearest first; ties go to the smaller site id
    so that the same data always gives the same answer."""
    if k <= 0 or not site_ids:
        return []
    target_ = np.asarray(target, dtype=np.float64)
    return nearest_rows(target_, priors, self_terms(priors), site_ids, k)


def nearest_rows(
    target: np.ndarray,
    candidates: np.ndarray,
    candidate_terms: np.ndarray,
    site_ids: Sequence[str],
    k: int,
    eligible: np.ndarray | None = None,
) -> list[Ranked]:
    """`nearest` over the divergences of `candidates` from `target`, computed in two passes:
    every row in float32 (a logarithm per entry is most of a query's time, and float32's
    is several times faster), then, in float64, only the rows that pass could not tell
    from the k-th nearest (within `screen_tolerance`). The answer is `nearest`'s over
    float64 divergences of every row: a row among the k nearest is within twice the
    float32 error of the k-th in float32, so it passes the screen."""
    if eligible is None:
        eligible = np.ones(candidates.shape[0], dtype=bool)
    count = int(np.count_nonzero(eligible))
    if k <= 0 or not count:
        return []
    if k < count:
        # Every row, the ineligible ones made infinitely far: cheaper than a copy of the rest.
        rough = js_divergences_32(target, candidates, candidate_terms)
        rough[~eligible] = np.inf
        kth = np.partition(rough, k - 1)[k - 1]
        width = max(target.shape[0], candidates.shape[1])
        rows = np.flatnonzero(rough <= kth + screen_tolerance(width))
    else:
        rows = np.flatnonzero(eligible)
    exact = js_divergences(target, candidates[rows], candidate_terms[rows])
    shortlist = [site_ids[int(i)] for i in rows]
    return nearest(exact, shortlist, k)


def screen_tolerance(classes: int) -> float:
    """Twice a bound on how far a float32 divergence over `classes` classes is from the
    float64 one: float32 sums of n terms are good to n * epsilon of the terms' absolute
    sum, which for sum x log2 x over a distribution is at most log2(n) (+ 1 for sum x);
    three such sums make a divergence. With room to spare (x 2)."""
    return 2 * 2 * 3 * classes * _EPSILON_32 * (math.log2(max(classes, 2)) + 1) + 1e-9


def js_divergences_32(
    target: np.ndarray, candidates: np.ndarray, candidate_terms: np.ndarray
) -> np.ndarray:
    """`js_divergences` in float32 (good to `screen_tolerance`): to screen, not to answer."""
    width = max(target.shape[0], candidates.shape[1])
    p = _pad(target[np.newaxis, :], width).astype(np.float32)
    mixed = _pad(candidates, width).astype(np.float32)
    mixed += p
    logs = np.maximum(mixed, _SMALLEST_32)
    np.log2(logs, out=logs)
    sums = np.einsum("ij,ij->i", mixed, logs)
    own = float(self_terms(p.astype(np.float64))[0])
    rough: np.ndarray = 0.5 * (own + candidate_terms.astype(np.float32) - sums)
    return rough


def nearest(
    divergences: np.ndarray,
    site_ids: Sequence[str],
    k: int,
    eligible: np.ndarray | None = None,
) -> list[Ranked]:
    """The k rows of smallest divergence among the `eligible` ones (a boolean mask; all if
    None), nearest first, ties to the smaller site id."""
    if eligible is not None:
        rows = np.flatnonzero(eligible)
        divergences = divergences[rows]
    else:
        rows = np.arange(len(divergences))
    if k <= 0 or not len(rows):
        return []
    # Rounded for ordering: float noise (1e-17) must not decide between equal priors.
    rounded = np.round(divergences, 12)
    if k < len(rows):
        # Only the k smallest and whatever ties the k-th are sorted, not every site.
        kth = np.partition(rounded, k - 1)[k - 1]
        chosen = np.flatnonzero(rounded <= kth)
    else:
        chosen = np.arange(len(rows))
    order = sorted(chosen.tolist(), key=lambda i: (rounded[i], site_ids[int(rows[i])]))[:k]
    return [Ranked(site_ids[int(rows[i])], float(divergences[i])) for i in order]


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


def _x_log2_x(rows: np.ndarray) -> np.ndarray:
    """sum x log2 x of each row, with 0 log 0 = 0 (its limit): a 0 is logged as the
    smallest float's log2 (-1074), finite, and multiplied by 0."""
    logs = np.maximum(rows, _SMALLEST)
    np.log2(logs, out=logs)
    sums: np.ndarray = np.einsum("ij,ij->i", rows, logs)
    return sums
