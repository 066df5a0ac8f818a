"""Jobs: submit, list, read, cancel; their telemetry history and their commands."""

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, status
from sqlalchemy.orm import Session

from atoll.platform.control.api.deps import Admin
from atoll.platform.control.api.routes import V1, errors, job_out, jobs_out
from atoll.platform.control.crud import commands as command_store
from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.crud import sites as site_store
from atoll.platform.control.crud import telemetry as telemetry_store
from atoll.platform.control.dispatcher import close_job
from atoll.platform.control.lifecycle import TERMINAL_JOB, SiteView
from atoll.platform.control.models import Job
from atoll.platform.control.schemas import (
    CommandList,
    CommandOut,
    JobCreate,
    JobOut,
    JobPage,
    Sample,
    SamplePage,
)
from atoll.platform.control.schemas_match import NOT_JOINED, schema_problems
from atoll.platform.control.states import JobState
from atoll.platform.core.errors import AtollError
from atoll.platform.data.schema import DataReport
from atoll.platform.service.deps import ReadSession, WriteSession
from atoll.platform.service.errors import Conflict, Invalid, NotFound
from atoll.platform.service.sql import utcnow
from atoll.platform.transfer.job import CartelJob

router = APIRouter(prefix=f"{V1}/jobs", tags=["jobs"])
commands_router = APIRouter(prefix=f"{V1}/commands", tags=["jobs"])
Limit = Annotated[int, Query(ge=1, le=500, description="At most this many.")]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    dependencies=[Admin],
    responses=errors(403),
    summary="Submit a job",
)
def submit(body: JobCreate, session: WriteSession) -> JobOut:
    """The job waits (`pending`) until every site its topology (a cartel job: its `sites`)
    names has an agent that is online, active and free; then each site gets its part as a
    command, and the job runs."""
    spec = body.spec
    if isinstance(spec, CartelJob):
        sites, shards = spec.sites, 1  # a cartel site links to its neighbours on one port
    else:
        try:
            sites = spec.topologies()[0].sites
            spec.partition_spec()
        except AtollError as e:
            raise Invalid(str(e), "spec", "body") from e
        shards = spec.shards
    if spec.data == "site":  # either kind: from what the sites reported, never the data
        problems = schema_problems(spec.expected_schema, _data_reports(session, sites))
        if problems:
            raise Invalid(problems, "spec", "body")
    job = job_store.create_job(
        session,
        body.name,
        spec.model_dump(mode="json"),
        sites,
        shards,
        spec.clocks,
        utcnow(),
    )
    session.commit()
    return job_out(session, job)


@router.get("", responses=errors(), summary="List jobs, newest first")
def list_jobs(
    session: ReadSession,
    state: Annotated[str | None, Query(description=f"One of {', '.join(JobState)}.")] = None,
    limit: Limit = 50,
    offset: Annotated[int, Query(ge=0, description="Skip this many (paging by page).")] = 0,
    sort: Annotated[
        Literal["submitted", "-submitted"],
        Query(description="By submission time: `-submitted` newest first (the default)."),
    ] = "-submitted",
    before: Annotated[
        datetime | None, Query(description="Only jobs submitted before this (paging).")
    ] = None,
) -> JobPage:
    """A page of jobs and `total`, how many match. Page with `offset`, or with `before` =
    the last job's `submitted_at` (as `next_before` says) to read on from there."""
    if state is not None and state not in {s.value for s in JobState}:
        raise Invalid(f"must be one of {', '.join(JobState)}", "state", "query")
    wanted = JobState(state) if state else None
    if before is not None:
        jobs = job_store.list_jobs(session, wanted, limit, before)
        total = job_store.page_jobs(session, wanted, 1, 0)[1]
    else:
        jobs, total = job_store.page_jobs(session, wanted, limit, offset, sort == "submitted")
    return JobPage(
        jobs=jobs_out(session, jobs),
        next_before=jobs[-1].submitted_at if len(jobs) == limit else None,
        total=total,
    )


@router.get("/{job_id}", responses=errors(404), summary="A job, with every site's progress")
def get_job(job_id: str, session: ReadSession) -> JobOut:
    return job_out(session, _job(session, job_id))


@router.post(
    "/{job_id}/cancel",
    dependencies=[Admin],
    responses=errors(403, 404, 409),
    summary="Cancel a job",
)
def cancel(job_id: str, session: WriteSession) -> JobOut:
    """Its sites stop at their next clock, with a checkpoint. A job that has ended is 409."""
    job = _job(session, job_id)
    if job.state in TERMINAL_JOB:
        raise Conflict(f"job {job_id} is already {job.state}", "job_id", "path")
    was = job.state
    job.state, job.message = JobState.cancelled, "cancelled by an operator"
    job.finished_at = job.updated_at = utcnow()
    if was != JobState.pending:
        views = {p.site: SiteView(p.state, None) for p in job_store.job_sites(session, job_id)}
        close_job(session, job, views)
    session.commit()
    return job_out(session, job)


@router.get("/{job_id}/telemetry", responses=errors(404), summary="Telemetry history, for charts")
def telemetry(
    job_id: str,
    session: ReadSession,
    after: Annotated[int, Query(ge=0, description="Samples after this id.")] = 0,
    site: Annotated[str | None, Query(description="Only this site.")] = None,
    kind: Annotated[str | None, Query(description="Only step, eval, geo or end.")] = None,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
) -> SamplePage:
    """Oldest first. Read on with `after` = the last id, as `next_after` says."""
    _job(session, job_id)
    rows = telemetry_store.history(session, job_id, after, site, kind, limit)
    samples = [Sample.model_validate(r, from_attributes=True) for r in rows]
    return SamplePage(samples=samples, next_after=samples[-1].id if samples else after)


@commands_router.get("", responses=errors(), summary="Commands and how far they got")
def list_commands(
    session: ReadSession,
    site: Annotated[str | None, Query(description="Only to this site.")] = None,
    job_id: Annotated[str | None, Query(description="Only for this job.")] = None,
    limit: Limit = 100,
) -> CommandList:
    """Newest first. What a start carries (the site's part of the job) is not listed."""
    rows = command_store.list_commands(session, site, job_id, limit)
    return CommandList(commands=[CommandOut.model_validate(r, from_attributes=True) for r in rows])


def _job(session: Session, job_id: str) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}", "job_id", "path")
    return job


def _data_reports(session: Session, sites: tuple[str, ...]) -> dict[str, DataReport | str | None]:
    """What each of the job's sites last reported of its data."""
    reports: dict[str, DataReport | str | None] = {}
    for name in sites:
        site = site_store.get_site(session, name)
        if site is None or site.incarnation is None:
            reports[name] = NOT_JOINED
        else:
            report = site.data_report
            reports[name] = DataReport.model_validate(report) if report else None
    return reports
