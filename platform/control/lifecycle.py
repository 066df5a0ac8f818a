"""A job's state from its sites' states, sans I/O.

    pending --dispatch--> running --> completed | failed
       |                   ^   |
       |                   |   v
       +--cancel--> cancelled  paused (every site stopped: drained or shut down)

A site's part goes assigned -> starting -> running -> finished | failed, or
stopped (paused with a checkpoint, resumed later) or cancelled. A site that went
offline, or whose clock has not moved for a while, neither ends the job nor holds it
forever: the others go on (the geo tier stops waiting for a silent mirror), and once
every site that still trains is done, the job ends without it. If it comes back while
the others train, it rejoins; after they are done there is nothing left to rejoin.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from atoll.platform.control.states import JobState, SiteState

TERMINAL_JOB = frozenset({JobState.completed, JobState.failed, JobState.cancelled})
ACTIVE_SITE = frozenset({SiteState.assigned, SiteState.starting, SiteState.running})
TERMINAL_SITE = frozenset({SiteState.finished, SiteState.failed, SiteState.cancelled})


@dataclass(frozen=True)
class SiteView:
    state: SiteState
    online: bool | None  # None: unknown (Redis unreachable), which counts as online
    message: str | None = None
    stalled: bool = False  # its clock has not moved for a while


def next_job_state(current: JobState, sites: Mapping[str, SiteView]) -> tuple[JobState, str | None]:
    """The job's state given its sites', and a message saying why when it is not plain."""
    if current in TERMINAL_JOB or current == JobState.pending:
        return current, None
    by_state: dict[str, list[str]] = {}
    for name, site in sorted(sites.items()):
        live = site.state in ACTIVE_SITE and site.online is not False and not site.stalled
        by_state.setdefault("live" if live else site.state, []).append(name)
    lost = [n for state in ACTIVE_SITE for n in by_state.get(state, [])]
    stopped, failed = by_state.get("stopped", []), by_state.get("failed", [])
    if by_state.get("live"):
        return JobState.running, None
    if failed:
        reasons = "; ".join(f"{n}: {sites[n].message or 'failed'}" for n in failed)
        return JobState.failed, f"failed at {reasons}"
    if by_state.get("finished"):
        left = sorted([*lost, *stopped])
        note = (
            f"completed without {', '.join(left)} (offline, stalled or stopped)" if left else None
        )
        return JobState.completed, note
    if lost:
        return JobState.running, f"waiting for {', '.join(sorted(lost))} to come back online"
    # Stopped (drained) sites pause the job; with none, every site cancelled on its own side.
    paused = f"stopped at {', '.join(stopped)}; resumes when they are activated"
    return (JobState.paused, paused) if stopped else (JobState.cancelled, None)


def sites_to_close(sites: Mapping[str, SiteView]) -> list[str]:
    """Once a job has ended: the sites whose agents may still run or resume their part."""
    return sorted(n for n, s in sites.items() if s.state not in TERMINAL_SITE)
