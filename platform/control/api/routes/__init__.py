"""One module per resource. Here: what they share (error documentation, the job view)."""

from typing import Any

from sqlalchemy.orm import Session

from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.models import Job, Site
from atoll.platform.control.schemas import JobOut, JobSiteOut
from atoll.platform.geo.job import GeoJob
from atoll.platform.service.schemas import ErrorBody

V1 = "/v1"


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error answers a route can give, all of them `ErrorBody`."""
    meaning = {
        401: "missing or wrong admin token",
        403: "not allowed",
        404: "no such record",
        409: "conflicts with the current state",
        422: "invalid request: `problems` names each field and what is wrong",
        503: "database unavailable; retry",
    }
    return {s: {"model": ErrorBody, "description": meaning[s]} for s in (422, 503, *statuses)}


def job_out(session: Session, job: Job) -> JobOut:
    parts = job_store.job_sites(session, job.id)
    online = {p.site: bool(s.online) if (s := session.get(Site, p.site)) else False for p in parts}
    clock = max((p.clock for p in parts), default=0)
    return JobOut(
        id=job.id,
        name=job.name,
        state=job.state,
        message=job.message,
        tls=job.tls,
        spec=GeoJob.model_validate(job.spec),
        sites=[
            JobSiteOut.model_validate(
                {**{c: getattr(p, c) for c in _PART_FIELDS}, "online": online[p.site]}
            )
            for p in parts
        ],
        params=job.params,
        wan_bytes=sum(p.wan_bytes for p in parts),
        bsp_wan_bytes=None if job.bsp_bytes_per_clock is None else job.bsp_bytes_per_clock * clock,
        submitted_at=job.submitted_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
    )


_PART_FIELDS = (
    "site",
    "state",
    "clock",
    "total_clocks",
    "accuracy",
    "final_accuracy",
    "wan_bytes",
    "stall_s",
    "restarts",
    "samples",
    "stop_reason",
    "message",
)
