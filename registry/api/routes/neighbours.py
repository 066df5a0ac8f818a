"""Neighbours: the live sites with the same model signature, nearest in class priors first.

The routes are `async`: most queries are answered from the in-memory snapshot on the
event loop (under a millisecond of numpy at 10,000 sites, no I/O), and only the rest go
to a worker thread and the database, so the common case pays no trip to a thread.
"""

from typing import Annotated

import numpy as np
from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool

from atoll.platform.service.deps import DatabaseDep
from atoll.platform.service.errors import Invalid
from atoll.registry.api.deps import CallerDep, Now, SettingsDep, SnapshotDep
from atoll.registry.api.routes import V1, SiteId, checked_priors, errors
from atoll.registry.crud import neighbours
from atoll.registry.schemas import NeighbourList, NeighbourParams, NeighbourQuery

router = APIRouter(prefix=V1, tags=["neighbours"])


def _checked_k(k: int, limit: int, location: str) -> int:
    if k > limit:
        raise Invalid(f"must be at most {limit}", "k", location)
    return k


@router.get(
    "/sites/{site_id}/neighbours",
    responses=errors(404, 409),
    summary="A site's k nearest neighbours",
)
async def site_neighbours(
    site_id: SiteId,
    _caller: CallerDep,
    database: DatabaseDep,
    settings: SettingsDep,
    now: Now,
    params: Annotated[NeighbourParams, Query()],
    snapshot: SnapshotDep,
) -> NeighbourList:
    """Ranks by Jensen-Shannon divergence between the site's latest priors and each
    candidate's. Candidates: other registered sites, seen within `window_s` (by default
    the liveness window), whose latest report has the same model signature. 409 if the
    site never reported."""
    limit = _checked_k(params.k, settings.max_neighbours, "query")
    window_s = params.window_s or settings.liveness_window_s
    site = str(site_id)
    if snapshot is not None:
        answer = neighbours.answer_from_snapshot(
            snapshot, None, None, limit, [site], now, window_s, site
        )
        if answer is not None:
            return answer

    def from_database() -> NeighbourList:
        with database.reader.connect() as conn:
            return neighbours.neighbours_of_site(conn, site, limit, now, window_s, snapshot)

    return await run_in_threadpool(from_database)


@router.post("/neighbours", responses=errors(413), summary="Neighbours for given priors")
async def neighbours_for_priors(
    body: NeighbourQuery,
    _caller: CallerDep,
    database: DatabaseDep,
    settings: SettingsDep,
    now: Now,
    snapshot: SnapshotDep,
) -> NeighbourList:
    """For a site that has not reported yet: rank the live sites with `model_signature`
    against `class_priors` given here. Writes nothing."""
    priors = checked_priors(body.class_priors, settings.max_classes)
    k = _checked_k(body.k, settings.max_neighbours, "body")
    exclude = [str(s) for s in body.exclude]
    window = settings.liveness_window_s
    signature = body.model_signature
    if snapshot is not None:
        target = np.asarray(priors, dtype=np.float64)
        answer = neighbours.answer_from_snapshot(
            snapshot, target, signature, k, exclude, now, window
        )
        if answer is not None:
            return answer

    def from_database() -> NeighbourList:
        with database.reader.connect() as conn:
            return neighbours.rank(
                conn, priors, signature, k, exclude, now, window, snapshot=snapshot
            )

    return await run_in_threadpool(from_database)
