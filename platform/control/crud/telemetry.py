"""Telemetry history (what charts draw) and where the stream reader got to."""

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from atoll.platform.bus.messages import Telemetry
from atoll.platform.control.models import Cursor, JobSite, TelemetrySample

# A sample row keeps the message's fields as they are, each in the column of its name.
_SAMPLE_COLUMNS = {c.name for c in TelemetrySample.__table__.columns if c.name != "id"}


def record(session: Session, samples: Sequence[Telemetry], now: datetime) -> None:
    """Store the samples of known jobs; the newest figures also go to each site's part."""
    parts: dict[tuple[str, str], JobSite | None] = {}
    for sample in samples:
        key = (sample.job_id, sample.site)
        if key not in parts:
            parts[key] = session.get(JobSite, key)
        part = parts[key]
        if part is None:
            continue
        session.add(TelemetrySample(**sample.model_dump(include=_SAMPLE_COLUMNS)))
        if part.progress_at is None or sample.time >= part.progress_at:
            if sample.clock != part.clock:
                part.advanced_at = now.timestamp()
            part.clock = sample.clock
            part.accuracy = sample.accuracy if sample.accuracy is not None else part.accuracy
            part.wan_bytes = sample.wan_bytes if sample.wan_bytes is not None else part.wan_bytes
            part.stall_s = sample.stall_s if sample.stall_s is not None else part.stall_s
            part.progress_at = sample.time
            part.updated_at = now


def history(
    session: Session, job_id: str, after: int, site: str | None, kind: str | None, limit: int
) -> list[TelemetrySample]:
    query = (
        select(TelemetrySample)
        .where(TelemetrySample.job_id == job_id, TelemetrySample.id > after)
        .order_by(TelemetrySample.id)
        .limit(limit)
    )
    if site is not None:
        query = query.where(TelemetrySample.site == site)
    if kind is not None:
        query = query.where(TelemetrySample.kind == kind)
    return list(session.scalars(query))


def get_cursor(session: Session, name: str) -> str | None:
    found = session.get(Cursor, name)
    return found.value if found else None


def set_cursor(session: Session, name: str, value: str) -> None:
    found = session.get(Cursor, name)
    if found is None:
        session.add(Cursor(name=name, value=value))
    else:
        found.value = value
