"""One module per resource. Here: what they share (error documentation, the job view)."""

from typing import Any

from sqlalchemy.orm import Session

from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.models import Job, Site
from atoll.platform.control.schemas import JobOut, JobSiteOut
from atoll.platform.geo.job import GeoJob
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
    parts = job_store.job_sites(session, job.id)
    online = {p.site: bool(s.online) if (s := session.get(Site, p.site)) else False for p in parts}
    clock = max((p.clock for p in parts), default=0)
    return from_row(
        JobOut,
        job,
        spec=GeoJob.model_validate(job.spec),
        sites=[from_row(JobSiteOut, p, online=online[p.site]) for p in parts],
        wan_bytes=sum(p.wan_bytes for p in parts),
        bsp_wan_bytes=None if job.bsp_bytes_per_clock is None else job.bsp_bytes_per_clock * clock,
    )
