"""The control plane's tables: the state of record. Redis holds nothing that is not here.

Every table starts with `control_` and Alembic keeps its own version table, so the
control plane can share a database with the registry. The Alembic migrations in
`migrations/versions` create exactly this schema (a test compares them).
"""

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from atoll.platform.bus.messages import CommandKind
from atoll.platform.control.states import CommandState, JobState, SiteState, SiteStatus
from atoll.platform.service.sql import NAMING, StrEnumColumn, UTCDateTime

ID_LENGTH = 36
NAME_LENGTH = 64
STATE_LENGTH = 16
# An autoincrementing 64-bit key; SQLite autoincrements only an INTEGER PRIMARY KEY.
SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING)


class Job(Base):
    __tablename__ = "control_jobs"

    id: Mapped[str] = mapped_column(sa.String(ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(128))
    spec: Mapped[dict[str, Any]] = mapped_column(sa.JSON)  # the GeoJob, as submitted
    state: Mapped[JobState] = mapped_column(StrEnumColumn(JobState, STATE_LENGTH), index=True)
    message: Mapped[str | None] = mapped_column(sa.Text)
    sites: Mapped[list[str]] = mapped_column(sa.JSON)  # in the topology's order
    shards: Mapped[int] = mapped_column(sa.Integer)
    clocks: Mapped[int] = mapped_column(sa.Integer)
    params: Mapped[int | None] = mapped_column(sa.BigInteger)
    bsp_bytes_per_clock: Mapped[int | None] = mapped_column(sa.BigInteger)
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class JobSite(Base):
    """One site's part in a job."""

    __tablename__ = "control_job_sites"

    job_id: Mapped[str] = mapped_column(
        sa.ForeignKey("control_jobs.id", ondelete="CASCADE"), primary_key=True
    )
    site: Mapped[str] = mapped_column(sa.String(NAME_LENGTH), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(sa.Integer)
    state: Mapped[SiteState] = mapped_column(StrEnumColumn(SiteState, STATE_LENGTH))
    clock: Mapped[int] = mapped_column(sa.Integer, default=0)
    total_clocks: Mapped[int | None] = mapped_column(sa.Integer)
    accuracy: Mapped[float | None] = mapped_column(sa.Float)
    final_accuracy: Mapped[float | None] = mapped_column(sa.Float)
    wan_bytes: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    stall_s: Mapped[float] = mapped_column(sa.Float, default=0.0)
    restarts: Mapped[int] = mapped_column(sa.Integer, default=0)
    stop_reason: Mapped[str | None] = mapped_column(sa.String(STATE_LENGTH))
    message: Mapped[str | None] = mapped_column(sa.Text)
    samples: Mapped[int | None] = mapped_column(sa.BigInteger)
    started_at: Mapped[float | None] = mapped_column(sa.Float)  # the site's clock, epoch seconds
    finished_at: Mapped[float | None] = mapped_column(sa.Float)
    progress_at: Mapped[float | None] = mapped_column(sa.Float)  # time of the newest figures
    advanced_at: Mapped[float | None] = mapped_column(sa.Float)  # when its clock last moved (here)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Site(Base):
    """An edge agent as the control plane knows it: from its status reports and heartbeats,
    and what an operator decided (drain, remove)."""

    __tablename__ = "control_sites"

    name: Mapped[str] = mapped_column(sa.String(NAME_LENGTH), primary_key=True)
    state: Mapped[SiteStatus] = mapped_column(StrEnumColumn(SiteStatus, STATE_LENGTH))
    agent_state: Mapped[str | None] = mapped_column(sa.String(STATE_LENGTH))
    online: Mapped[bool] = mapped_column(sa.Boolean, default=False)
    region: Mapped[str | None] = mapped_column(sa.String(NAME_LENGTH))
    registry_id: Mapped[str | None] = mapped_column(sa.String(ID_LENGTH))
    geo_host: Mapped[str | None] = mapped_column(sa.String(255))
    geo_port: Mapped[int | None] = mapped_column(sa.Integer)
    geo_ports: Mapped[int] = mapped_column(sa.Integer, default=0)
    version: Mapped[str | None] = mapped_column(sa.String(NAME_LENGTH))
    incarnation: Mapped[str | None] = mapped_column(sa.String(NAME_LENGTH))
    status_seq: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    status_time: Mapped[float] = mapped_column(sa.Float, default=0.0)
    duplicates: Mapped[int] = mapped_column(sa.Integer, default=0)
    # Its DataReport (schema, samples, label histogram), as its agent last reported it.
    data_report: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    # Its DeviceTierReport (SuperLink, latest device rounds), as its agent last reported it.
    device_report: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    first_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Command(Base):
    __tablename__ = "control_commands"

    id: Mapped[str] = mapped_column(sa.String(ID_LENGTH), primary_key=True)
    site: Mapped[str] = mapped_column(sa.String(NAME_LENGTH))
    job_id: Mapped[str | None] = mapped_column(sa.String(ID_LENGTH), index=True)
    kind: Mapped[CommandKind] = mapped_column(sa.String(STATE_LENGTH))
    payload: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)  # a start: big, never listed
    state: Mapped[CommandState] = mapped_column(StrEnumColumn(CommandState, STATE_LENGTH))
    detail: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    issued_at: Mapped[float] = mapped_column(sa.Float)
    published_epoch: Mapped[str | None] = mapped_column(sa.String(NAME_LENGTH))
    published_at: Mapped[float | None] = mapped_column(sa.Float)
    publish_count: Mapped[int] = mapped_column(sa.Integer, default=0)
    applied_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        sa.Index("ix_control_commands_state_site", "state", "site"),
        sa.Index("ix_control_commands_site_created", "site", "created_at"),
    )


class TelemetrySample(Base):
    __tablename__ = "control_telemetry"

    id: Mapped[int] = mapped_column(SERIAL, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(sa.String(ID_LENGTH))
    site: Mapped[str] = mapped_column(sa.String(NAME_LENGTH))
    time: Mapped[float] = mapped_column(sa.Float)
    kind: Mapped[str] = mapped_column(sa.String(STATE_LENGTH))
    clock: Mapped[int] = mapped_column(sa.Integer)
    loss: Mapped[float | None] = mapped_column(sa.Float)
    accuracy: Mapped[float | None] = mapped_column(sa.Float)
    wan_bytes: Mapped[int | None] = mapped_column(sa.BigInteger)
    stall_s: Mapped[float | None] = mapped_column(sa.Float)

    __table_args__ = (sa.Index("ix_control_telemetry_job_id_id", "job_id", "id"),)


class Cursor(Base):
    """Where a reader of a Redis stream got to, so a restarted control plane goes on there."""

    __tablename__ = "control_cursors"

    name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)  # telemetry:<site>
    value: Mapped[str] = mapped_column(sa.String(NAME_LENGTH))


class EnrolToken(Base):
    """A site's one-time enrolment token (only its hash); gone once used or revoked."""

    __tablename__ = "control_enrol_tokens"

    site: Mapped[str] = mapped_column(sa.String(NAME_LENGTH), primary_key=True)
    token_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    issued_at: Mapped[datetime] = mapped_column(UTCDateTime())


class SiteCertificate(Base):
    """A certificate the CA signed for a site's own key; a revoked one stays, for the CRL."""

    __tablename__ = "control_site_certificates"

    serial: Mapped[str] = mapped_column(sa.String(64), primary_key=True)  # decimal: 159 bits
    site: Mapped[str] = mapped_column(sa.String(NAME_LENGTH), index=True)
    issued_at: Mapped[datetime] = mapped_column(UTCDateTime())
    not_after: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # SHA-256 of its agent's Redis password (platform/bus/acl.py): Redis takes the hash.
    redis_password_sha256: Mapped[str] = mapped_column(sa.String(64))
