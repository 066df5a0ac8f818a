"""Neighbour queries: rank the live sites with a model signature by divergence of priors.

The hot read of the service, so it runs on a Core connection with statements built
once: at 10,000 sites, turning rows into objects would cost more than ranking them.
"""

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import Connection, and_, bindparam, select

from atoll.platform.service.errors import Conflict, NotFound
from atoll.registry.core.candidates import CandidateCache, Candidates
from atoll.registry.models import Report, Site
from atoll.registry.neighbours import priors_from_bytes, rank_neighbours, stack_priors
from atoll.registry.schemas import Neighbour, NeighbourList

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
_DETAILS = (
    select(
        _sites.c.id,
        _sites.c.name,
        _sites.c.region,
        _sites.c.endpoint,
        _sites.c.model_version,
        _sites.c.last_seen_at,
        _reports.c.accuracy,
        _reports.c.samples,
        _reports.c.drift,
    )
    .outerjoin(
        _reports,
        and_(_reports.c.site_id == _sites.c.id, _reports.c.seq == _sites.c.reports_total),
    )
    .where(_sites.c.id.in_(bindparam("b_ids", expanding=True)))
)


def neighbours_of_site(
    conn: Connection,
    site_id: str,
    k: int,
    now: datetime,
    window_s: float,
    cache: CandidateCache | None = None,
) -> NeighbourList:
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
    own = priors_from_bytes(priors).tolist()
    return rank(conn, own, signature, k, [site_id], now, window_s, site_id, cache)


def rank(
    conn: Connection,
    priors: Sequence[float],
    signature: str,
    k: int,
    exclude: Sequence[str],
    now: datetime,
    window_s: float,
    site_id: str | None = None,
    cache: CandidateCache | None = None,
) -> NeighbourList:
    """`site_id` is the site asked about, if the priors are its own."""
    everyone = cache.get(signature, window_s) if cache else None
    if everyone is None:
        since = now - timedelta(seconds=window_s)
        rows = conn.execute(_CANDIDATES, {"b_signature": signature, "b_since": since}).all()
        everyone = Candidates([r[0] for r in rows], stack_priors([r[1] for r in rows]))
        if cache:
            cache.put(signature, window_s, everyone)
    excluded = set(exclude)
    keep = [i for i, s in enumerate(everyone.site_ids) if s not in excluded]
    ids = [everyone.site_ids[i] for i in keep]
    matrix = everyone.priors if len(keep) == len(everyone.site_ids) else everyone.priors[keep]
    ranked = rank_neighbours(priors, ids, matrix, k)
    details = {}
    if ranked:
        found = conn.execute(_DETAILS, {"b_ids": [r.site_id for r in ranked]}).mappings()
        details = {row["id"]: row for row in found}
    return NeighbourList(
        site_id=site_id,
        model_signature=signature,
        k=k,
        candidates=len(ids),
        window_s=window_s,
        neighbours=[
            Neighbour(**details[r.site_id], site_id=r.site_id, divergence=r.divergence)
            for r in ranked
        ],
    )
