"""Every reporting site's latest priors in memory, by model signature: what a neighbour
query ranks, without reading 10,000 rows from the database each time. Sans I/O.

Per signature, one matrix (a row per site, zero-padded to the widest priors), each row's
part of a Jensen-Shannon divergence kept beside it (`self_terms`), and when each site
was last seen (seconds since the epoch): a query is a few vectorised passes over it.
Beside them, each site's `Profile` (what a neighbour answer says of a winner), so that a
query whose winners all have one needs no database at all.
The server fills it from the database and keeps it current (`crud.neighbours`).
"""

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from atoll.registry.neighbours import Ranked, nearest_rows, self_terms

_INITIAL_ROWS = 64


class Facts(NamedTuple):
    """What a site's latest report says of its model, besides priors and signature."""

    model_version: str | None
    accuracy: float | None
    samples: int | None
    drift: bool | None


class Profile(NamedTuple):
    """A site as a neighbour answer describes it, but for its divergence and last seen.
    (A named tuple: a reload makes one per site, and a tuple is the cheapest to make.)"""

    name: str
    region: str
    endpoint: str | None
    model_version: str | None
    accuracy: float | None
    samples: int | None
    drift: bool | None

    def reported(self, facts: Facts) -> "Profile":
        return self._replace(**facts._asdict())


@dataclass(frozen=True)
class SiteRow:
    site_id: str
    signature: str
    priors: np.ndarray
    seen_s: float  # last seen, seconds since the epoch
    facts: Facts | None = None  # from the report that brought these priors, if one did


@dataclass(frozen=True)
class SignatureRows:
    """The sites of one model signature at once: how a snapshot is loaded."""

    signature: str
    site_ids: list[str]
    priors: np.ndarray  # one row per site
    seen_s: np.ndarray


@dataclass(frozen=True)
class Ranking:
    neighbours: list[Ranked]
    candidates: int  # the sites that were eligible, before keeping the k nearest


class _Group:
    """The sites of one model signature; rows 0..size-1 are in use."""

    def __init__(self, width: int) -> None:
        self.site_ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.priors = np.zeros((_INITIAL_ROWS, width))
        self.terms = np.zeros(_INITIAL_ROWS)
        self.seen_s = np.zeros(_INITIAL_ROWS)

    @classmethod
    def filled(cls, site_ids: list[str], priors: np.ndarray, seen_s: np.ndarray) -> "_Group":
        group = cls(priors.shape[1])
        group.site_ids = list(site_ids)
        group.row_of = {site_id: row for row, site_id in enumerate(site_ids)}
        group.priors = np.array(priors, dtype=np.float64)  # a copy of its own, writable
        group.terms = self_terms(group.priors)
        group.seen_s = np.array(seen_s, dtype=np.float64)
        return group

    @property
    def size(self) -> int:
        return len(self.site_ids)

    def put(self, site_id: str, priors: np.ndarray, seen_s: float) -> None:
        row = self.row_of.get(site_id)
        if row is None:
            row = self.size
            self._make_room(row + 1)
            self.site_ids.append(site_id)
            self.row_of[site_id] = row
        if priors.shape[0] > self.priors.shape[1]:
            self._widen(priors.shape[0])
        self.priors[row] = 0.0
        self.priors[row, : priors.shape[0]] = priors
        self.terms[row] = self_terms(self.priors[row : row + 1])[0]
        self.seen_s[row] = seen_s

    def remove(self, site_id: str) -> None:
        """The last row moves into the hole, so rows stay packed."""
        row = self.row_of.pop(site_id)
        last = self.size - 1
        if row != last:
            moved = self.site_ids[last]
            self.site_ids[row] = moved
            self.row_of[moved] = row
            for column in (self.priors, self.terms, self.seen_s):
                column[row] = column[last]
        self.site_ids.pop()

    def _make_room(self, rows: int) -> None:
        if rows <= len(self.seen_s):
            return
        capacity = max(rows, 2 * len(self.seen_s))
        self.priors = _grown(self.priors, capacity)
        self.terms = _grown(self.terms, capacity)
        self.seen_s = _grown(self.seen_s, capacity)

    def _widen(self, width: int) -> None:
        wider = np.zeros((self.priors.shape[0], width))
        wider[:, : self.priors.shape[1]] = self.priors
        self.priors = wider  # zero columns change no row's terms


def _grown(a: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class PriorsSnapshot:
    def __init__(
        self, groups: Iterable[SignatureRows] = (), profiles: Mapping[str, Profile] | None = None
    ) -> None:
        self._groups: dict[str, _Group] = {}
        self._signature_of: dict[str, str] = {}
        self._profiles: dict[str, Profile] = dict(profiles or {})
        for rows in groups:
            if len(set(rows.site_ids)) != len(rows.site_ids) or any(
                s in self._signature_of for s in rows.site_ids
            ):
                raise ValueError(f"a site comes twice in the rows of {rows.signature}")
            if not rows.site_ids:
                continue
            self._groups[rows.signature] = _Group.filled(rows.site_ids, rows.priors, rows.seen_s)
            self._signature_of.update(dict.fromkeys(rows.site_ids, rows.signature))

    def __len__(self) -> int:
        return len(self._signature_of)

    def latest(self, site_id: str) -> tuple[str, np.ndarray] | None:
        """A site's model signature and latest priors (zero-padded to its signature's
        widest), if it reported."""
        signature = self._signature_of.get(site_id)
        if signature is None:
            return None
        group = self._groups[signature]
        return signature, group.priors[group.row_of[site_id]].copy()

    def seen_s(self, site_id: str) -> float | None:
        signature = self._signature_of.get(site_id)
        if signature is None:
            return None
        group = self._groups[signature]
        return float(group.seen_s[group.row_of[site_id]])

    def put(self, row: SiteRow) -> None:
        """A site's latest report (or a newer sign of life with the same priors)."""
        old = self._signature_of.get(row.site_id)
        if old is not None and old != row.signature:
            self._remove(row.site_id, old)
        group = self._groups.get(row.signature)
        if group is None:
            group = self._groups[row.signature] = _Group(row.priors.shape[0])
        group.put(row.site_id, np.asarray(row.priors, dtype=np.float64), row.seen_s)
        self._signature_of[row.site_id] = row.signature
        profile = self._profiles.get(row.site_id)
        if profile is not None and row.facts is not None:
            self._profiles[row.site_id] = profile.reported(row.facts)

    def profiles(self, site_ids: Sequence[str]) -> dict[str, tuple[Profile, float]]:
        """Each named site's profile and when it was last seen, for those that have a
        profile and priors (a site registered since the last load has none yet)."""
        found = {}
        for site_id in site_ids:
            profile, seen_s = self._profiles.get(site_id), self.seen_s(site_id)
            if profile is not None and seen_s is not None:
                found[site_id] = (profile, seen_s)
        return found

    def changed(self, site_id: str) -> None:
        """The site's name, region or endpoint changed: its profile is stale until the
        next load (answers read it from the database meanwhile)."""
        self._profiles.pop(site_id, None)

    def put_if_newer(self, row: SiteRow) -> None:
        """`put`, unless what the snapshot holds for the site was seen later: reports
        committed while a reload read the database must not undo newer ones."""
        seen = self.seen_s(row.site_id)
        if seen is None or row.seen_s >= seen:
            self.put(row)

    def seen(self, site_id: str, seen_s: float) -> None:
        """A sign of life without a report (a heartbeat): the site stays with its priors."""
        signature = self._signature_of.get(site_id)
        if signature is not None:
            group = self._groups[signature]
            row = group.row_of[site_id]
            group.seen_s[row] = max(group.seen_s[row], seen_s)

    def forget(self, site_id: str) -> None:
        """A deregistered site."""
        self._profiles.pop(site_id, None)
        signature = self._signature_of.get(site_id)
        if signature is not None:
            self._remove(site_id, signature)

    def _remove(self, site_id: str, signature: str) -> None:
        group = self._groups[signature]
        group.remove(site_id)
        del self._signature_of[site_id]
        if group.size == 0:
            del self._groups[signature]

    def rank(
        self,
        signature: str,
        target: np.ndarray,
        k: int,
        exclude: Collection[str],
        since_s: float,
    ) -> Ranking:
        """The k sites of `signature` nearest to `target` in priors among those seen at or
        after `since_s` and not excluded; ties to the smaller site id."""
        return self.candidates(signature, exclude).rank(target, k, since_s)

    def candidates(self, signature: str, exclude: Collection[str] = ()) -> "Candidates":
        """A copy of the sites of `signature` but the excluded ones, to rank against: a
        caller holding a lock takes this under it, and ranks after letting go."""
        group = self._groups.get(signature)
        if group is None or group.size == 0:
            return Candidates([], np.zeros((0, 1)), np.zeros(0), np.zeros(0))
        n = group.size
        seen_s = group.seen_s[:n].copy()
        for site_id in exclude:
            row = group.row_of.get(site_id)
            if row is not None:
                seen_s[row] = -np.inf  # never within a window
        return Candidates(
            list(group.site_ids), group.priors[:n].copy(), group.terms[:n].copy(), seen_s
        )


@dataclass(frozen=True)
class Candidates:
    """The sites of one signature as they were when copied out of a snapshot."""

    site_ids: list[str]
    priors: np.ndarray
    terms: np.ndarray  # each row's self_terms
    seen_s: np.ndarray  # -inf for a site excluded

    def rank(self, target: np.ndarray, k: int, since_s: float) -> Ranking:
        if not self.site_ids:
            return Ranking([], 0)
        eligible = self.seen_s >= since_s
        target = np.asarray(target, dtype=np.float64)
        neighbours = nearest_rows(target, self.priors, self.terms, self.site_ids, k, eligible)
        return Ranking(neighbours, int(eligible.sum()))
