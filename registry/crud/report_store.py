"""Appending a report: the service's hot write path, so Core statements built once on the
tables (the ORM's unit of work, and building a statement per request, cost more than
the SQL), and on PostgreSQL one statement, one round trip.

The append takes the site's next sequence number, refreshes the site's copy of its
latest report (what neighbour queries read), inserts the report and drops the reports
beyond the retention limit, atomically: on any error nothing is written.
"""

from datetime import datetime
from typing import Any, cast
from uuid import uuid4

from sqlalchemy import (
    JSON,
    Connection,
    Table,
    bindparam,
    delete,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from atoll.platform.service.database import Database
from atoll.platform.service.errors import Conflict, NotFound
from atoll.platform.service.sql import UTCDateTime
from atoll.registry.models import Report, Site
from atoll.registry.neighbours import priors_to_bytes
from atoll.registry.schemas import Report as ReportOut
from atoll.registry.schemas import ReportCreate

_COMPARED = ("class_priors", "accuracy", "samples", "model_signature", "model_version", "drift")
# Declarative classes type their table as a FromClause; these two are Tables.
_sites, _reports = cast(Table, Site.__table__), cast(Table, Report.__table__)
# The UPDATE's row lock orders concurrent reports of one site.
_NEXT_SEQ = (
    update(_sites)
    .where(_sites.c.id == bindparam("site_id"), _sites.c.deregistered_at.is_(None))
    .values(
        reports_total=_sites.c.reports_total + 1,
        last_seen_at=bindparam("created_at"),
        model_signature=bindparam("b_signature"),
        model_version=bindparam("b_version"),
        latest_priors=bindparam("priors_blob"),
    )
    .returning(_sites.c.reports_total)
)
_INSERT = insert(_reports)
_EXPIRE = delete(_reports).where(
    _reports.c.site_id == bindparam("b_site"), _reports.c.seq <= bindparam("b_upto")
)
_BY_ID = select(_reports).where(_reports.c.id == bindparam("b_id"))
# The same three steps as one PostgreSQL statement (data-modifying CTEs): one round
# trip, and atomic without BEGIN and COMMIT of its own.
_APPEND_POSTGRESQL = text(
    """
    WITH next AS (
        UPDATE sites SET reports_total = reports_total + 1, last_seen_at = :created_at,
            model_signature = :model_signature, model_version = :model_version,
            latest_priors = :priors_blob
        WHERE id = :site_id AND deregistered_at IS NULL
        RETURNING reports_total
    ), stored AS (
        INSERT INTO reports (id, site_id, seq, created_at, class_priors, accuracy, samples,
            model_signature, model_version, drift)
        SELECT :id, :site_id, reports_total, :created_at, :class_priors, :accuracy, :samples,
            :model_signature, :model_version, :drift
        FROM next
        RETURNING seq
    ), expired AS (
        DELETE FROM reports
        WHERE site_id = :site_id AND seq <= (SELECT seq FROM stored) - :retention
    )
    SELECT seq FROM stored
    """
).bindparams(
    bindparam("created_at", type_=UTCDateTime()),
    bindparam("class_priors", type_=JSON()),
)


def add_report(
    database: Database,
    site_id: str,
    data: ReportCreate,
    priors: list[float],
    retention: int,
    now: datetime,
) -> tuple[ReportOut, bool]:
    """Stores the report (priors already normalised) and makes it the site's latest.

    Returns the report and whether it is new: a retry with a report id already stored
    returns the stored one, and a different report under that id is a conflict.
    """
    values: dict[str, Any] = {
        "id": str(data.id or uuid4()),
        "site_id": site_id,
        "created_at": now,
        "class_priors": priors,
        "accuracy": data.accuracy,
        "samples": data.samples,
        "model_signature": data.model_signature,
        "model_version": data.model_version,
        "drift": data.drift,
    }
    try:
        if database.backend == "postgresql":
            with database.reader.connect() as conn:  # autocommit: the statement commits
                seq = _append_in_one_statement(conn, values, priors, retention)
                if seq is None:
                    raise _why_not(conn, site_id)
        else:
            with database.transaction() as conn:
                seq = _append_step_by_step(conn, values, priors, retention)
                if seq is None:
                    raise _why_not(conn, site_id)
    except IntegrityError as e:  # the report id is taken: a retry, or a clash
        return _replayed(database, values, e), False
    return ReportOut.model_validate({**values, "seq": seq}), True


def _append_in_one_statement(
    conn: Connection, values: dict[str, Any], priors: list[float], retention: int
) -> int | None:
    params = {**values, "priors_blob": priors_to_bytes(priors), "retention": retention}
    return conn.execute(_APPEND_POSTGRESQL, params).scalar()


def _append_step_by_step(
    conn: Connection, values: dict[str, Any], priors: list[float], retention: int
) -> int | None:
    seq = conn.execute(
        _NEXT_SEQ,
        {
            "site_id": values["site_id"],
            "created_at": values["created_at"],
            "b_signature": values["model_signature"],
            "b_version": values["model_version"],
            "priors_blob": priors_to_bytes(priors),
        },
    ).scalar()
    if seq is None:
        return None
    conn.execute(_INSERT, {**values, "seq": seq})
    if seq > retention:
        conn.execute(_EXPIRE, {"b_site": values["site_id"], "b_upto": seq - retention})
    return seq


def _why_not(conn: Connection, site_id: str) -> Exception:
    found = conn.execute(select(_sites.c.deregistered_at).where(_sites.c.id == site_id)).first()
    if found is None:
        return NotFound(f"no site {site_id}", "site_id", "path")
    return Conflict(f"site {site_id} is deregistered", "site_id", "path")


def _replayed(database: Database, attempted: dict[str, Any], error: Exception) -> ReportOut:
    with database.reader.connect() as conn:
        stored = conn.execute(_BY_ID, {"b_id": attempted["id"]}).mappings().first()
    if stored is None:
        raise error
    same = stored["site_id"] == attempted["site_id"] and all(
        stored[f] == attempted[f] for f in _COMPARED
    )
    if not same:
        raise Conflict(
            f"report id {attempted['id']} is already used by a different report", "id", "body"
        )
    return ReportOut.model_validate(dict(stored))
