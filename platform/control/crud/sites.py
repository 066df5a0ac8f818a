"""Sites as agents report them, and what operators decide about them.

An agent's status report is a full snapshot, so applying one is idempotent and a
report older than the last one applied is skipped: the control plane never goes back
in time when Redis delivers a report twice or late.
"""

from datetime import datetime
from typing import Literal

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from atoll.platform.bus.messages import AgentStatus
from atoll.platform.control.models import Command, Job, JobSite, Site
from atoll.platform.control.states import CommandState, SiteState, SiteStatus
from atoll.platform.service.sql import utcnow


def is_newer(site: Site, status: AgentStatus) -> bool:
    """Within one agent process reports are numbered; across processes, timed."""
    if site.incarnation == status.incarnation:
        return status.seq > site.status_seq
    return status.time >= site.status_time


def apply_status(session: Session, status: AgentStatus, now: datetime) -> bool:
    """Take a report into the tables; False when it was not newer than what they hold."""
    site = session.get(Site, status.site)
    if site is None:
        site = _new_site(session, status.site, None, now)
    elif not is_newer(site, status):
        return False
    site.agent_state = status.state
    site.region = status.region
    site.registry_id = status.registry_id
    site.geo_host, site.geo_port, site.geo_ports = (
        status.geo_host,
        status.geo_port,
        status.geo_ports,
    )
    site.version = status.version
    site.incarnation, site.status_seq, site.status_time = (
        status.incarnation,
        status.seq,
        status.time,
    )
    site.duplicates = status.duplicates
    site.data_report = status.data.model_dump(mode="json") if status.data else None
    site.device_report = status.devices.model_dump(mode="json") if status.devices else None
    site.last_seen_at = site.updated_at = now
    for report in status.jobs:
        part = session.get(JobSite, (report.job_id, status.site))
        if part is None:
            continue  # a job this control plane does not know (another deployment's, or gone)
        part.state = SiteState(report.state)
        part.restarts = report.restarts
        part.stop_reason = report.stop_reason
        part.message = report.message
        part.started_at = report.started_at
        part.finished_at = report.finished_at
        part.final_accuracy = report.final_accuracy
        part.samples = report.samples if report.samples is not None else part.samples
        if report.params is not None:
            # Every site builds the same model: the first to report sizes the job.
            job = session.get(Job, report.job_id)
            if job is not None and job.params is None:
                job.params, job.bsp_bytes_per_clock = report.params, report.bsp_bytes_per_clock
        if part.progress_at is None or status.time >= part.progress_at:
            if report.clock != part.clock:
                part.advanced_at = now.timestamp()
            part.clock = report.clock
            part.total_clocks = report.total_clocks or part.total_clocks
            part.accuracy = report.accuracy
            part.wan_bytes = report.wan_bytes
            part.stall_s = report.stall_s
            part.progress_at = status.time
        part.updated_at = now
    for applied in status.applied:
        command = session.get(Command, applied.id)
        if command is None or command.state != CommandState.issued:
            continue
        command.state = CommandState(applied.outcome)
        command.detail = applied.detail
        command.applied_at = now
        if command.kind == "start_job" and applied.outcome == "refused" and command.job_id:
            part = session.get(JobSite, (command.job_id, command.site))
            if part is not None and part.state == SiteState.assigned:
                part.state, part.message = SiteState.failed, f"the agent refused: {applied.detail}"
    return True


def get_site(session: Session, name: str) -> Site | None:
    return session.get(Site, name)


def list_sites(session: Session, include_removed: bool = True) -> list[Site]:
    query = select(Site).order_by(Site.name)
    if not include_removed:
        query = query.where(Site.state != SiteStatus.removed)
    return list(session.scalars(query))


SiteSort = Literal["name", "region", "state", "online", "last_seen"]
_SORT_COLUMNS: dict[str, InstrumentedAttribute] = {
    "name": Site.name,
    "region": Site.region,
    "state": Site.state,
    "online": Site.online,
    "last_seen": Site.last_seen_at,
}


def page_sites(
    session: Session,
    *,
    state: SiteStatus | None = None,
    region: str | None = None,
    online: bool | None = None,
    name_contains: str | None = None,
    sort: SiteSort = "name",
    descending: bool = False,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[Site], int]:
    """One page of the sites that match, in the order asked (then by name), and how many
    match in all: the database pages, sorts and counts, never the caller."""
    conditions: list[ColumnElement[bool]] = []
    if state is not None:
        conditions.append(Site.state == state)
    if region is not None:
        conditions.append(Site.region == region)
    if online is not None:
        conditions.append(Site.online.is_(online))
    if name_contains:
        escaped = name_contains.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conditions.append(Site.name.like(f"%{escaped}%", escape="\\"))
    column = _SORT_COLUMNS[sort]
    order = [column.desc() if descending else column.asc()]
    if sort != "name":
        order.append(Site.name.asc())
    query = select(Site).where(*conditions).order_by(*order).limit(limit).offset(offset)
    total = session.scalar(select(func.count()).select_from(Site).where(*conditions)) or 0
    return list(session.scalars(query)), total


def declare(session: Session, name: str, region: str | None, now: datetime) -> Site | None:
    """A site an operator expects before its agent first joins (None if one is known by
    that name). It can be drained or removed at once; its agent's first report fills in
    the rest."""
    if session.get(Site, name) is not None:
        return None
    return _new_site(session, name, region, now)


def _new_site(session: Session, name: str, region: str | None, now: datetime) -> Site:
    """Active and offline until its heartbeat says otherwise."""
    site = Site(
        name=name,
        state=SiteStatus.active,
        online=False,
        region=region,
        geo_ports=0,
        status_seq=0,
        status_time=0.0,
        duplicates=0,
        first_seen_at=now,
        last_seen_at=now,
        updated_at=now,
    )
    session.add(site)
    return site


def set_online(session: Session, name: str, online: bool, at: datetime | None = None) -> None:
    site = session.get(Site, name)
    if site is not None:
        site.online = online
        if online:
            site.last_seen_at = at or utcnow()
