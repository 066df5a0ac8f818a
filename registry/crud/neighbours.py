"""Neighbour queries: rank the live sites with a model signature by divergence of priors.

The hot read of the service, so it runs on a Core connection with statements built
once. The candidates come from the server process's `LiveSnapshot` (every reporting
site's latest priors in memory, reloaded from the database every `refresh_s` by a thread
of its own, and told at once of the reports this process stores), or, with no snapshot,
from the database at each query. With a snapshot, a query whose site and winners it
knows is answered from memory alone (`answer_from_snapshot`: no database, no worker
thread); otherwise the asking site's priors and the k winners' details are read from
the database.
"""

import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Connection, and_, bindparam, select

from atoll.platform.service.database import Database
from atoll.platform.service.errors import Conflict, NotFound
from atoll.registry.core.periodic import Periodic
from atoll.registry.core.snapshot import (
    PriorsSnapshot,
    Profile,
    Ranking,
    SignatureRows,
    SiteRow,
)
from atoll.registry.models import Report, Site
from atoll.registry.neighbours import priors_from_bytes, rank_neighbours, stack_priors
from atoll.registry.schemas import Neighbour, NeighbourList

_log = logging.getLogger(__name__)

_sites, _reports = Site.__table__, Report.__table__
_TARGET = select(_sites.c.model_signature, _sites.c.latest_priors).where(
    _sites.c.id == bindparam("b_site")
)
# Two columns for every candidate; the details are read for the k winners alone.
_CANDIDATES = select(_sites.c.id, _sites.c.latest_priors).where(
    _sites.c.model_signature == bindparam("b_signature"),
    _sites.c.last_seen_at >= bindparam("b_since"),
    _sites.c.deregistered_at.is_(None),
    _sites.c.latest_priors.is_not(None),
)
# What an answer says of a site, `Profile`'s fields in its order: from the site's row and
# its latest report.
_PROFILE = (
    _sites.c.name,
    _sites.c.region,
    _sites.c.endpoint,
    _sites.c.model_version,
    _reports.c.accuracy,
    _reports.c.samples,
    _reports.c.drift,
)
_WITH_LATEST_REPORT = _sites.outerjoin(
    _reports, and_(_reports.c.site_id == _sites.c.id, _reports.c.seq == _sites.c.reports_total)
)
_DETAILS = (
    select(_sites.c.id, _sites.c.last_seen_at, *_PROFILE)
    .select_from(_WITH_LATEST_REPORT)
    .where(_sites.c.id.in_(bindparam("b_ids", expanding=True)))
)


# What a snapshot loads: every registered site's latest priors, live or not (each query
# has its own window), and its profile (the columns after the first four).
_EVERYONE = (
    select(
        _sites.c.id, _sites.c.model_signature, _sites.c.latest_priors, _sites.c.last_seen_at,
        *_PROFILE,
    )
    .select_from(_WITH_LATEST_REPORT)
    .where(
        _sites.c.deregistered_at.is_(None),
        _sites.c.latest_priors.is_not(None),
        _sites.c.model_signature.is_not(None),
    )
)  # fmt: skip


class LiveSnapshot:
    """A `PriorsSnapshot` kept current: reloaded whole every `refresh_s` (which brings in
    what other server processes stored, heartbeats, deregistrations), and told of this
    process's reports as they commit. Queries and updates take a lock; a reload reads the
    database outside it and swaps the new snapshot in, replaying the reports stored while
    it read."""

    def __init__(self, database: Database, refresh_s: float) -> None:
        self.database = database
        self.refresh_s = refresh_s
        self._snapshot = PriorsSnapshot()
        self._lock = threading.Lock()
        self._during_reload: list[SiteRow] | None = None
        self._changed_during_reload: list[str] = []
        self._refresher = Periodic("neighbour-snapshot", refresh_s, self._refresh)

    def start(self) -> "LiveSnapshot":
        self._refresher.start(first=self.reload)
        return self

    def close(self) -> None:
        self._refresher.close()

    def _refresh(self) -> None:
        try:
            self.reload()
        except Exception:  # the database is away for a moment: keep the last snapshot
            _log.warning("reloading the neighbour snapshot failed", exc_info=True)

    def reload(self) -> None:
        with self._lock:
            self._during_reload, self._changed_during_reload = [], []
        try:
            with self.database.reader.connect() as conn:
                rows = conn.execute(_EVERYONE).all()
            fresh = PriorsSnapshot(_by_signature(rows), {r[0]: Profile._make(r[4:]) for r in rows})
        finally:
            with self._lock:
                replay, self._during_reload = self._during_reload or [], None
        with self._lock:
            for row in replay:
                fresh.put_if_newer(row)
            for site_id in self._changed_during_reload:
                fresh.changed(site_id)
            self._snapshot = fresh

    def stored(self, rows: Sequence[SiteRow]) -> None:
        """Reports this process committed: each site's latest, at once."""
        with self._lock:
            for row in rows:
                self._snapshot.put_if_newer(row)
            if self._during_reload is not None:
                self._during_reload.extend(rows)

    def seen(self, site_id: str, seen_s: float) -> None:
        """A heartbeat of this process's."""
        with self._lock:
            self._snapshot.seen(site_id, seen_s)

    def forget(self, site_id: str) -> None:
        with self._lock:
            self._snapshot.forget(site_id)

    def changed(self, site_id: str) -> None:
        """This process changed the site's name, region or endpoint."""
        with self._lock:
            self._snapshot.changed(site_id)
            if self._during_reload is not None:  # the load under way may have read the old
                self._changed_during_reload.append(site_id)

    def profiles(self, site_ids: Sequence[str]) -> dict[str, tuple[Profile, float]]:
        with self._lock:
            return self._snapshot.profiles(site_ids)

    def latest(self, site_id: str) -> tuple[str, np.ndarray] | None:
        with self._lock:
            return self._snapshot.latest(site_id)

    def rank(
        self, signature: str, target: np.ndarray, k: int, exclude: Sequence[str], since_s: float
    ) -> Ranking:
        """Copies the candidates under the lock and ranks them outside it, so that queries
        in several threads rank at once (numpy lets go of the GIL)."""
        with self._lock:
            candidates = self._snapshot.candidates(signature, exclude)
        return candidates.rank(target, k, since_s)


def _by_signature(rows: Sequence[Sequence[Any]]) -> list[SignatureRows]:
    grouped: dict[str, list[Sequence[Any]]] = {}
    for row in rows:
        grouped.setdefault(row[1], []).append(row)
    return [
        SignatureRows(
            signature,
            [r[0] for r in group],
            stack_priors([r[2] for r in group]),
            np.fromiter((r[3].timestamp() for r in group), dtype=np.float64, count=len(group)),
        )
        for signature, group in grouped.items()
    ]


def answer_from_snapshot(
    snapshot: LiveSnapshot,
    priors: np.ndarray | None,
    signature: str | None,
    k: int,
    exclude: Sequence[str],
    now: datetime,
    window_s: float,
    site_id: str | None = None,
) -> NeighbourList | None:
    """The answer from memory alone, or None when the snapshot lacks something it needs:
    the asking site (`priors` None: the site's own, from the snapshot), or a winner's
    profile (a site registered, or renamed, since the last load). Then ask the database."""
    if priors is None or signature is None:
        if site_id is None or (latest := snapshot.latest(site_id)) is None:
            return None
        signature, priors = latest
    since = now - timedelta(seconds=window_s)
    ranking = snapshot.rank(signature, priors, k, exclude, since.timestamp())
    profiles = snapshot.profiles([r.site_id for r in ranking.neighbours])
    if len(profiles) < len(ranking.neighbours):
        return None
    details = {
        site: {**profile._asdict(), "last_seen_at": datetime.fromtimestamp(seen_s, UTC)}
        for site, (profile, seen_s) in profiles.items()
    }
    return _answer(ranking, details, signature, k, window_s, site_id)


def neighbours_of_site(
    conn: Connection,
    site_id: str,
    k: int,
    now: datetime,
    window_s: float,
    snapshot: LiveSnapshot | None = None,
) -> NeighbourList:
    """The site's own priors come from the snapshot when it holds them (as current as its
    candidates), else from the database, which also tells an unknown site (404) from one
    that has not reported (409)."""
    latest = snapshot.latest(site_id) if snapshot is not None else None
    if latest is None:
        latest = _own_latest(conn, site_id)
    signature, own = latest
    return rank(conn, own, signature, k, [site_id], now, window_s, site_id, snapshot)


def _own_latest(conn: Connection, site_id: str) -> tuple[str, np.ndarray]:
    target = conn.execute(_TARGET, {"b_site": site_id}).first()
    if target is None:
        raise NotFound(f"no site {site_id}", "site_id", "path")
    signature, priors = target
    if signature is None or priors is None:
        raise Conflict(
            f"site {site_id} has not reported yet, so it has no priors to compare; "
            "POST /v1/neighbours with its priors instead",
            "site_id",
            "path",
        )
    return signature, priors_from_bytes(priors)


def rank(
    conn: Connection,
    priors: Sequence[float] | np.ndarray,
    signature: str,
    k: int,
    exclude: Sequence[str],
    now: datetime,
    window_s: float,
    site_id: str | None = None,
    snapshot: LiveSnapshot | None = None,
) -> NeighbourList:
    """`site_id` is the site asked about, if the priors are its own."""
    since = now - timedelta(seconds=window_s)
    target = np.asarray(priors, dtype=np.float64)
    if snapshot is not None:
        ranking = snapshot.rank(signature, target, k, exclude, since.timestamp())
    else:
        ranking = _rank_from_database(conn, target, signature, k, exclude, since)
    details: dict[str, Mapping[Any, Any]] = {}
    if ranking.neighbours:
        ids = [r.site_id for r in ranking.neighbours]
        details = {row["id"]: row for row in conn.execute(_DETAILS, {"b_ids": ids}).mappings()}
    return _answer(ranking, details, signature, k, window_s, site_id)


def _answer(
    ranking: Ranking,
    details: Mapping[str, Mapping[Any, Any]],
    signature: str,
    k: int,
    window_s: float,
    site_id: str | None,
) -> NeighbourList:
    """The winners with their details (`Neighbour`'s fields but the divergence), by site."""
    return NeighbourList(
        site_id=site_id,
        model_signature=signature,
        k=k,
        candidates=ranking.candidates,
        window_s=window_s,
        neighbours=[
            Neighbour(**details[r.site_id], site_id=r.site_id, divergence=r.divergence)
            for r in ranking.neighbours
            if r.site_id in details  # (deregistered and deleted since the snapshot: gone)
        ],
    )


def _rank_from_database(
    conn: Connection,
    target: np.ndarray,
    signature: str,
    k: int,
    exclude: Sequence[str],
    since: datetime,
) -> Ranking:
    rows = conn.execute(_CANDIDATES, {"b_signature": signature, "b_since": since}).all()
    excluded = set(exclude)
    ids = [r[0] for r in rows if r[0] not in excluded]
    matrix = stack_priors([r[1] for r in rows if r[0] not in excluded])
    return Ranking(rank_neighbours(target.tolist(), ids, matrix, k), len(ids))
