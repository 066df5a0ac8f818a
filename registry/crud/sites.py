"""Sites: register, list, read, update, heartbeat, deregister."""

from datetime import datetime, timedelta
from uuid import uuid4

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from atoll.platform.service.errors import Conflict, Invalid, NotFound
from atoll.platform.service.schemas import from_row
from atoll.registry.crud.tokens import issue_token, revoke_all
from atoll.registry.models import Site
from atoll.registry.pagination import CursorError, decode_cursor, encode_cursor
from atoll.registry.schemas import Capabilities, SiteCreate, SiteFilters, SiteStatus, SiteUpdate
from atoll.registry.schemas import Site as SiteOut


def site_status(site: Site, now: datetime, window_s: float) -> SiteStatus:
    if site.deregistered_at is not None:
        return "deregistered"
    return "live" if now - site.last_seen_at <= timedelta(seconds=window_s) else "stale"


def site_out(site: Site, now: datetime, window_s: float) -> SiteOut:
    return from_row(
        SiteOut,
        site,
        capabilities=Capabilities.model_validate(site.capabilities),
        status=site_status(site, now, window_s),
    )


def register(session: Session, data: SiteCreate, now: datetime) -> tuple[Site, str, str]:
    """The new site, its first token and that token's id. Commits."""
    _ensure_name_free(session, data.name)
    site = Site(
        id=str(uuid4()),
        name=data.name,
        region=data.region,
        endpoint=data.endpoint,
        labels=data.labels,
        capabilities=data.capabilities.model_dump(),
        registered_at=now,
        updated_at=now,
        last_seen_at=now,
        reports_total=0,
    )
    try:
        session.add(site)
        session.flush()  # the site row first: the token refers to it
        row, token = issue_token(session, site.id, now)
        session.commit()
    except IntegrityError as e:  # another registration of the name won the race
        session.rollback()
        raise _name_taken(data.name) from e
    return site, token, row.id


def get_site(session: Session, site_id: str) -> Site:
    site = session.get(Site, site_id)
    if site is None:
        raise NotFound(f"no site {site_id}", "site_id", "path")
    return site


def registered_site(session: Session, site_id: str) -> Site:
    """The site, which must not be deregistered: only registered sites change."""
    site = get_site(session, site_id)
    if site.deregistered_at is not None:
        raise Conflict(f"site {site_id} is deregistered", "site_id", "path")
    return site


def list_sites(
    session: Session, filters: SiteFilters, now: datetime, window_s: float
) -> tuple[list[Site], str | None]:
    """One page in (name, id) order, and the cursor of the next page if there is one."""
    query = select(Site).where(*_filter_conditions(filters, now, window_s))
    if filters.cursor is not None:
        try:
            name, site_id = decode_cursor(filters.cursor, (str, str))
        except CursorError as e:
            raise Invalid(str(e), "cursor", "query") from e
        query = query.where(or_(Site.name > name, and_(Site.name == name, Site.id > site_id)))
    rows = list(session.scalars(query.order_by(Site.name, Site.id).limit(filters.limit + 1)))
    if len(rows) <= filters.limit:
        return rows, None
    last = rows[filters.limit - 1]
    return rows[: filters.limit], encode_cursor([last.name, last.id])


def _filter_conditions(
    filters: SiteFilters, now: datetime, window_s: float
) -> list[ColumnElement[bool]]:
    since = now - timedelta(seconds=window_s)
    conditions: list[ColumnElement[bool]] = []
    if filters.status == "deregistered":
        conditions.append(Site.deregistered_at.is_not(None))
    else:
        conditions.append(Site.deregistered_at.is_(None))
    if filters.status == "live":
        conditions.append(Site.last_seen_at >= since)
    elif filters.status == "stale":
        conditions.append(Site.last_seen_at < since)
    if filters.region is not None:
        conditions.append(Site.region == filters.region)
    if filters.model_signature is not None:
        conditions.append(Site.model_signature == filters.model_signature)
    if filters.name is not None:
        conditions.append(Site.name == filters.name)
    return conditions


def update_site(session: Session, site: Site, data: SiteUpdate, now: datetime) -> Site:
    """Applies the fields the request set. Commits."""
    given = data.model_fields_set
    if data.region is not None:
        site.region = data.region
    if "endpoint" in given:
        site.endpoint = data.endpoint
    if data.labels is not None:
        site.labels = data.labels
    if data.capabilities is not None:
        site.capabilities = data.capabilities.model_dump()
    site.updated_at = now
    session.commit()
    return site


def heartbeat(session: Session, site: Site, now: datetime) -> Site:
    site.last_seen_at = now
    session.commit()
    return site


def deregister(session: Session, site: Site, now: datetime) -> Site:
    """Marks the site deregistered and revokes its tokens; its history stays. Commits."""
    if site.deregistered_at is None:
        site.deregistered_at = now
        site.updated_at = now
        revoke_all(session, site.id, now)
        session.commit()
    return site


def count_by_status(session: Session, now: datetime, window_s: float) -> dict[str, int]:
    since = now - timedelta(seconds=window_s)
    deregistered = session.scalar(select(func.count()).where(Site.deregistered_at.is_not(None)))
    live = session.scalar(
        select(func.count()).where(Site.deregistered_at.is_(None), Site.last_seen_at >= since)
    )
    stale = session.scalar(
        select(func.count()).where(Site.deregistered_at.is_(None), Site.last_seen_at < since)
    )
    return {"live": live or 0, "stale": stale or 0, "deregistered": deregistered or 0}


def _ensure_name_free(session: Session, name: str) -> None:
    taken = session.scalar(select(Site.id).where(Site.name == name, Site.deregistered_at.is_(None)))
    if taken is not None:
        raise _name_taken(name)


def _name_taken(name: str) -> Conflict:
    return Conflict(f"a registered site is already named {name!r}", "name", "body")
