"""Sites, as their agents made them known: list, read, drain, activate, remove."""

from typing import Annotated, cast

from fastapi import APIRouter, Query, status
from sqlalchemy.orm import Session

from atoll.platform.bus.messages import CommandKind, DeviceTierReport
from atoll.platform.control.api.deps import Admin
from atoll.platform.control.api.routes import V1, errors
from atoll.platform.control.crud import commands as command_store
from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.crud import sites as site_store
from atoll.platform.control.models import Site
from atoll.platform.control.schemas import SiteDeclare, SiteList, SiteOut
from atoll.platform.control.states import SiteStatus
from atoll.platform.data.schema import DataReport
from atoll.platform.service.deps import ReadSession, WriteSession
from atoll.platform.service.errors import Conflict, NotFound
from atoll.platform.service.schemas import from_row
from atoll.platform.service.sql import utcnow

router = APIRouter(prefix=f"{V1}/sites", tags=["sites"])


@router.get("", responses=errors(), summary="Sites: filtered, sorted, a page at a time")
def list_sites(
    session: ReadSession,
    state: Annotated[SiteStatus | None, Query(description="Only sites in this state.")] = None,
    region: Annotated[str | None, Query(description="Only sites in this region.")] = None,
    online: Annotated[bool | None, Query(description="Only online (or offline) sites.")] = None,
    name: Annotated[
        str | None, Query(max_length=64, description="Only names containing this.")
    ] = None,
    sort: Annotated[
        str,
        Query(
            pattern=r"^-?(name|region|state|online|last_seen)$",
            description="name, region, state, online or last_seen; `-` first for descending.",
        ),
    ] = "name",
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 1000,
    offset: Annotated[int, Query(ge=0, description="Skip this many.")] = 0,
) -> SiteList:
    """Every site an agent has joined as, or an operator declared; `total` counts all that
    match."""
    rows, total = site_store.page_sites(
        session,
        state=state,
        region=region,
        online=online,
        name_contains=name,
        sort=cast(site_store.SiteSort, sort.removeprefix("-")),
        descending=sort.startswith("-"),
        limit=limit,
        offset=offset,
    )
    busy = job_store.busy_sites(session)
    return SiteList(sites=[_out(s, busy.get(s.name)) for s in rows], total=total)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    dependencies=[Admin],
    responses=errors(409),
    summary="Declare a site before its agent joins",
)
def declare(body: SiteDeclare, session: WriteSession) -> SiteOut:
    """It is listed at once (offline, never joined) and can be drained or removed before its
    agent first reports; 409 if a site of that name is known."""
    site = site_store.declare(session, body.name, body.region, utcnow())
    if site is None:
        raise Conflict(f"site {body.name} is known already", "name", "body")
    session.commit()
    return _out(site, None)


@router.get("/{name}", responses=errors(404), summary="A site")
def get_site(name: str, session: ReadSession) -> SiteOut:
    return _out(_site(session, name), job_store.busy_sites(session).get(name))


@router.post(
    "/{name}/drain", dependencies=[Admin], responses=errors(404, 409), summary="Drain a site"
)
def drain(name: str, session: WriteSession) -> SiteOut:
    """Its agent stops its job at the next clock, with a checkpoint, and takes no new job
    until activated. The job goes on at the other sites."""
    return _decide(session, name, SiteStatus.draining, "drain")


@router.post(
    "/{name}/activate",
    dependencies=[Admin],
    responses=errors(404),
    summary="Activate a drained or removed site",
)
def activate(name: str, session: WriteSession) -> SiteOut:
    """It takes jobs again, and resumes (from its checkpoint) a job it stopped for the drain."""
    return _decide(session, name, SiteStatus.active, "activate")


@router.delete("/{name}", dependencies=[Admin], responses=errors(404, 409), summary="Remove a site")
def remove(name: str, session: WriteSession) -> SiteOut:
    """Like a drain, and the site is left out of listings of active sites until it is
    activated again; its history stays."""
    return _decide(session, name, SiteStatus.removed, "remove")


def _decide(session: Session, name: str, state: SiteStatus, kind: CommandKind) -> SiteOut:
    site = _site(session, name)
    if site.state == SiteStatus.removed and kind == "drain":
        raise Conflict(f"site {name} is removed; activate it first", "name", "path")
    if site.state != state:
        site.state, site.updated_at = state, utcnow()
        command_store.issue(session, name, kind, utcnow())
        session.commit()
    return _out(site, job_store.busy_sites(session).get(name))


def _site(session: Session, name: str) -> Site:
    site = site_store.get_site(session, name)
    if site is None:
        raise NotFound(f"no agent has joined as site {name}", "name", "path")
    return site


def _out(site: Site, job: str | None) -> SiteOut:
    endpoint = f"{site.geo_host}:{site.geo_port}" if site.geo_host and site.geo_port else None
    joined = site.incarnation is not None
    data = DataReport.model_validate(site.data_report) if site.data_report else None
    devices = DeviceTierReport.model_validate(site.device_report) if site.device_report else None
    return from_row(
        SiteOut, site, geo_endpoint=endpoint, job=job, joined=joined, data=data, devices=devices
    )
