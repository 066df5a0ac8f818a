"""Neighbours: the live sites with the same model signature, nearest in class priors first."""

from typing import Annotated

from fastapi import APIRouter, Query

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
def site_neighbours(
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
    with database.reader.connect() as conn:
        return neighbours.neighbours_of_site(conn, str(site_id), limit, now, window_s, snapshot)


@router.post("/neighbours", responses=errors(413), summary="Neighbours for given priors")
def neighbours_for_priors(
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
    with database.reader.connect() as conn:
        window = settings.liveness_window_s
        return neighbours.rank(
            conn, priors, body.model_signature, k, exclude, now, window, snapshot=snapshot
        )
