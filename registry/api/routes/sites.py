"""/v1/sites: register, list, read, update, heartbeat, deregister."""

from typing import Annotated

from fastapi import APIRouter, Query, status

from atoll.platform.service.deps import ReadSession, WriteSession
from atoll.registry.api.deps import (
    AdminDep,
    CallerDep,
    Now,
    SettingsDep,
    SnapshotDep,
    TokenCacheDep,
)
from atoll.registry.api.routes import V1, SiteId, errors
from atoll.registry.crud import sites
from atoll.registry.schemas import Site, SiteCreate, SiteCreated, SiteFilters, SitePage, SiteUpdate

router = APIRouter(prefix=f"{V1}/sites", tags=["sites"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=errors(403, 409, 413),
    summary="Register a site (admin)",
)
def register_site(
    body: SiteCreate, _admin: AdminDep, session: WriteSession, settings: SettingsDep, now: Now
) -> SiteCreated:
    """Answers the site with its token, which is shown only this once."""
    site, token, token_id = sites.register(session, body, now)
    out = sites.site_out(site, now, settings.liveness_window_s)
    return SiteCreated(**out.model_dump(), token=token, token_id=token_id)


@router.get("", responses=errors(), summary="List sites")
def list_sites(
    filters: Annotated[SiteFilters, Query()],
    _caller: CallerDep,
    session: ReadSession,
    settings: SettingsDep,
    now: Now,
) -> SitePage:
    """In name order, a page at a time; pass `next_cursor` back as `cursor` for the next."""
    rows, cursor = sites.list_sites(session, filters, now, settings.liveness_window_s)
    window = settings.liveness_window_s
    return SitePage(sites=[sites.site_out(s, now, window) for s in rows], next_cursor=cursor)


@router.get("/{site_id}", responses=errors(404), summary="Read a site")
def get_site(
    site_id: SiteId, _caller: CallerDep, session: ReadSession, settings: SettingsDep, now: Now
) -> Site:
    site = sites.get_site(session, str(site_id))
    return sites.site_out(site, now, settings.liveness_window_s)


@router.patch(
    "/{site_id}", responses=errors(403, 404, 409, 413), summary="Update a site's endpoint, etc."
)
def update_site(
    site_id: SiteId,
    body: SiteUpdate,
    caller: CallerDep,
    session: WriteSession,
    settings: SettingsDep,
    now: Now,
    snapshot: SnapshotDep,
) -> Site:
    """Fields left out stay as they are. The site itself or an admin."""
    caller.ensure_may_write(str(site_id))
    site = sites.update_site(session, sites.registered_site(session, str(site_id)), body, now)
    if snapshot is not None:
        snapshot.changed(site.id)
    return sites.site_out(site, now, settings.liveness_window_s)


@router.post(
    "/{site_id}/heartbeat", responses=errors(403, 404, 409), summary="Say the site is alive"
)
def heartbeat(
    site_id: SiteId,
    caller: CallerDep,
    session: WriteSession,
    settings: SettingsDep,
    now: Now,
    snapshot: SnapshotDep,
) -> Site:
    caller.ensure_may_write(str(site_id))
    site = sites.heartbeat(session, sites.registered_site(session, str(site_id)), now)
    if snapshot is not None:
        snapshot.seen(site.id, now.timestamp())
    return sites.site_out(site, now, settings.liveness_window_s)


@router.delete("/{site_id}", responses=errors(403, 404), summary="Deregister a site")
def deregister_site(
    site_id: SiteId,
    caller: CallerDep,
    session: WriteSession,
    settings: SettingsDep,
    now: Now,
    token_cache: TokenCacheDep,
    snapshot: SnapshotDep,
) -> Site:
    """Revokes its tokens and takes it out of neighbour answers; its records stay readable.
    Deregistering twice is not an error."""
    caller.ensure_may_write(str(site_id))
    site = sites.deregister(session, sites.get_site(session, str(site_id)), now)
    token_cache.forget_site(site.id)
    if snapshot is not None:
        snapshot.forget(site.id)
    return sites.site_out(site, now, settings.liveness_window_s)
