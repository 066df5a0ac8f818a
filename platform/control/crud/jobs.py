"""Jobs and their sites' parts."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from atoll.platform.control.lifecycle import TERMINAL_JOB, TERMINAL_SITE
from atoll.platform.control.models import Job, JobSite
from atoll.platform.control.states import JobState, SiteState


def create_job(
    session: Session,
    name: str | None,
    spec: dict[str, Any],
    sites: Sequence[str],
    shards: int,
    clocks: int,
    now: datetime,
) -> Job:
    job_id = str(uuid4())
    job = Job(
        id=job_id,
        name=name or f"job-{job_id[:8]}",
        spec=spec,
        state=JobState.pending,
        sites=list(sites),
        shards=shards,
        clocks=clocks,
        submitted_at=now,
        updated_at=now,
    )
    session.add(job)
    for position, site in enumerate(sites):
        session.add(
            JobSite(
                job_id=job_id,
                site=site,
                position=position,
                state=SiteState.pending,
                clock=0,
                total_clocks=clocks,
                wan_bytes=0,
                stall_s=0.0,
                restarts=0,
                updated_at=now,
            )
        )
    return job


def job_sites(session: Session, job_id: str) -> list[JobSite]:
    query = select(JobSite).where(JobSite.job_id == job_id).order_by(JobSite.position)
    return list(session.scalars(query))


def sites_of(session: Session, job_ids: Sequence[str]) -> dict[str, list[JobSite]]:
    found: dict[str, list[JobSite]] = {job_id: [] for job_id in job_ids}
    if job_ids:
        query = select(JobSite).where(JobSite.job_id.in_(job_ids)).order_by(JobSite.position)
        for part in session.scalars(query):
            found[part.job_id].append(part)
    return found


def list_jobs(
    session: Session, state: JobState | None, limit: int, before: datetime | None = None
) -> list[Job]:
    """Newest first."""
    query = select(Job).order_by(Job.submitted_at.desc(), Job.id.desc()).limit(limit)
    if state is not None:
        query = query.where(Job.state == state)
    if before is not None:
        query = query.where(Job.submitted_at < before)
    return list(session.scalars(query))


def page_jobs(
    session: Session, state: JobState | None, limit: int, offset: int, oldest_first: bool = False
) -> tuple[list[Job], int]:
    """One page of jobs by submission time (newest first unless `oldest_first`), and how
    many there are in all."""
    when = Job.submitted_at.asc() if oldest_first else Job.submitted_at.desc()
    tie = Job.id.asc() if oldest_first else Job.id.desc()
    conditions = [Job.state == state] if state is not None else []
    query = select(Job).where(*conditions).order_by(when, tie).limit(limit).offset(offset)
    total = session.scalar(select(func.count()).select_from(Job).where(*conditions)) or 0
    return list(session.scalars(query)), total


def jobs_in(session: Session, states: Sequence[str]) -> list[Job]:
    """Oldest first: the order they were submitted in."""
    query = select(Job).where(Job.state.in_(states)).order_by(Job.submitted_at, Job.id)
    return list(session.scalars(query))


def busy_sites(session: Session) -> dict[str, str]:
    """Site -> the unfinished job whose part there is not over."""
    query = (
        select(JobSite.site, JobSite.job_id)
        .join(Job, Job.id == JobSite.job_id)
        .where(Job.state.not_in(TERMINAL_JOB | {JobState.pending}))
        .where(JobSite.state.not_in(TERMINAL_SITE))
    )
    return {site: job_id for site, job_id in session.execute(query)}
