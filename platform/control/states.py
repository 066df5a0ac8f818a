"""The states the control plane's records go through, as typed enums.

Each is stored as its plain string value (`atoll.platform.service.sql.StrEnumColumn`),
the very strings the columns held before they were typed: no migration.
"""

from enum import StrEnum


class JobState(StrEnum):
    """A job: pending -> running -> completed | failed; paused; cancelled (lifecycle.py)."""

    pending = "pending"
    running = "running"
    paused = "paused"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"


class SiteState(StrEnum):
    """A site's part in a job: assigned -> starting -> running -> finished | failed, or
    stopped (paused with a checkpoint) or cancelled."""

    pending = "pending"
    assigned = "assigned"
    starting = "starting"
    running = "running"
    finished = "finished"
    failed = "failed"
    stopped = "stopped"
    cancelled = "cancelled"


class SiteStatus(StrEnum):
    """What operators decided for a site."""

    active = "active"
    draining = "draining"
    removed = "removed"


class CommandState(StrEnum):
    """A command to a site: issued until its agent says what it did with it."""

    issued = "issued"
    applied = "applied"
    refused = "refused"
    ignored = "ignored"
    superseded = "superseded"
