"""One module per resource. Here: what they share (error documentation, the job view)."""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.models import Job, JobSite, Site
from atoll.platform.control.schemas import JobOut, JobSiteOut, parse_spec
from atoll.platform.service.schemas import error_docs, from_row

V1 = "/v1"


ERROR_MEANINGS = {
    401: "missing or wrong admin token",
    403: "not allowed",
    404: "no such record",
    409: "conflicts with the current state",
    422: "invalid request: `problems` names each field and what is wrong",
    503: "database unavailable; retry",
}


def errors(*statuses: int) -> dict[int | str, Any]:
    """OpenAPI entries for the error answers a route can give."""
    return error_docs(ERROR_MEANINGS, 422, 503, *statuses)


def job_out(session: Session, job: Job) -> JobOut:
    return jobs_out(session, [job])[0]


def jobs_out(session: Session, jobs: Sequence[Job]) -> list[JobOut]:
    """The jobs with their sites' parts, in three queries whatever their number."""
    parts_of = job_store.sites_of(session, [j.id for j in jobs])
    names = {p.site for parts in parts_of.values() for p in parts}
    query = select(Site.name, Site.online).where(Site.name.in_(names))
    online = {name: bool(up) for name, up in session.execute(query)} if names else {}
    return [_job_out(job, parts_of[job.id], online) for job in jobs]


def _job_out(job: Job, parts: Sequence[JobSite], online: dict[str, bool]) -> JobOut:
    clock = max((p.clock for p in parts), default=0)
    return from_row(
        JobOut,
        job,
        spec=parse_spec(job.spec),
        sites=[from_row(JobSiteOut, p, online=bool(online.get(p.site))) for p in parts],
        wan_bytes=sum(p.wan_bytes for p in parts),
        bsp_wan_bytes=None if job.bsp_bytes_per_clock is None else job.bsp_bytes_per_clock * clock,
    )
