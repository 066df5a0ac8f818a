"""Which pending jobs start now, sans I/O.

A job needs every site its topology names: known to the control plane, active (not
draining or removed), online, free of other jobs, and listening on enough ports for
the job's shards. Jobs start in the order they were submitted; a job that waits
keeps its sites for itself, so a later job never starves it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from atoll.platform.control.states import SiteStatus


@dataclass(frozen=True)
class SiteSlot:
    state: SiteStatus
    online: bool | None
    busy_with: str | None  # the job it runs or holds, if any
    geo_ports: int


@dataclass(frozen=True)
class PendingJob:
    id: str
    sites: tuple[str, ...]
    shards: int


@dataclass(frozen=True)
class Schedule:
    start: list[str]
    waiting: dict[str, str]  # job id -> what it waits for


def schedule(pending: Sequence[PendingJob], sites: Mapping[str, SiteSlot]) -> Schedule:
    """`pending` in submission order."""
    held: dict[str, str] = {}
    start, waiting = [], {}
    for job in pending:
        problems = [
            p for name in job.sites if (p := _problem(name, job, sites.get(name), held)) is not None
        ]
        if problems:
            waiting[job.id] = "waiting for " + "; ".join(problems)
        else:
            start.append(job.id)
        for name in job.sites:
            held.setdefault(name, job.id)
    return Schedule(start, waiting)


def _problem(name: str, job: PendingJob, slot: SiteSlot | None, held: dict[str, str]) -> str | None:
    if slot is None:
        return f"{name} (no agent has joined as {name})"
    checks = (
        (slot.state != "active", slot.state),
        (slot.online is not True, "offline"),
        (slot.busy_with not in (None, job.id), f"running job {slot.busy_with}"),
        (held.get(name, job.id) != job.id, f"held for job {held.get(name)}, submitted earlier"),
        (
            slot.geo_ports < job.shards,
            f"listens on {slot.geo_ports} port(s); the job has {job.shards} shards",
        ),
    )
    return next((f"{name} ({why})" for failing, why in checks if failing), None)
