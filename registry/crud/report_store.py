"""Appending reports: the service's hot write path, so Core statements built once on the
tables (the ORM's unit of work, and building a statement per request, cost more than
the SQL).

An append takes the site's next sequence number, refreshes the site's copy of its
latest report (what neighbour queries read), inserts the report and drops the reports
beyond the retention limit, atomically: on any error nothing is written.

`add_reports` stores a batch in one transaction (the group-commit writer's handler: one
commit for the batch, and on PostgreSQL three statements whatever its size);
`add_report` stores one, and is what a batch falls back to, report by report, when it
fails as a whole (a report id already taken, a deadlock with another server process).
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
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
from sqlalchemy.exc import DBAPIError, IntegrityError

from atoll.platform.service.database import Database
from atoll.platform.service.errors import Conflict, NotFound
from atoll.platform.service.sql import UTCDateTime
from atoll.registry.core.report_batch import (
    arrival_ranks,
    assign_seqs,
    expiry_bounds,
    has_repeated_ids,
    last_of_each_site,
    reports_per_site,
)
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
        reports_total=_sites.c.reports_total + bindparam("b_count"),
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


# A batch on PostgreSQL, in one statement (one round trip, atomic in autocommit): raise
# each site's counter by its reports in the batch, insert the reports numbered from the
# new totals (rank: a report's place among its site's, 1, 2, ...), drop what is beyond
# the retention limit (a report that would be dropped at once is not inserted). Answers
# each updated site's new total; a site missing from it is unknown or deregistered.
_APPEND_BATCH_POSTGRESQL = text(
    """
    WITH counters AS (
        UPDATE sites SET reports_total = sites.reports_total + s.n, last_seen_at = s.seen,
            model_signature = s.signature, model_version = s.version, latest_priors = s.priors
        FROM unnest(CAST(:site_ids AS text[]), CAST(:counts AS bigint[]),
            CAST(:seen AS timestamptz[]), CAST(:signatures AS text[]), CAST(:versions AS text[]),
            CAST(:priors AS bytea[])) AS s(id, n, seen, signature, version, priors)
        WHERE sites.id = s.id AND sites.deregistered_at IS NULL
        RETURNING sites.id, sites.reports_total, s.n
    ), numbered AS (
        SELECT r.*, c.reports_total - c.n + r.rank AS seq, c.reports_total AS total
        FROM unnest(CAST(:ids AS text[]), CAST(:report_sites AS text[]),
            CAST(:ranks AS bigint[]), CAST(:created AS timestamptz[]),
            CAST(:class_priors AS json[]), CAST(:accuracies AS float8[]),
            CAST(:samples AS bigint[]), CAST(:report_signatures AS text[]),
            CAST(:report_versions AS text[]), CAST(:drifts AS boolean[]))
            AS r(id, site_id, rank, created_at, class_priors, accuracy, samples,
                model_signature, model_version, drift)
        JOIN counters c ON c.id = r.site_id
    ), stored AS (
        INSERT INTO reports (id, site_id, seq, created_at, class_priors, accuracy, samples,
            model_signature, model_version, drift)
        SELECT id, site_id, seq, created_at, class_priors, accuracy, samples,
            model_signature, model_version, drift
        FROM numbered WHERE seq > total - :retention
    ), expired AS (
        -- The ANY gives the planner the batch's sites to look up in the (site_id, seq)
        -- index, rather than scanning every report to join them with the counters.
        DELETE FROM reports USING counters c
        WHERE reports.site_id = ANY(CAST(:site_ids AS text[])) AND reports.site_id = c.id
            AND c.reports_total > :retention AND reports.seq <= c.reports_total - :retention
    )
    SELECT id, reports_total FROM counters
    """
)


@dataclass(frozen=True)
class NewReport:
    """A report a site sent, checked (priors normalised), waiting to be stored."""

    site_id: str
    data: ReportCreate
    priors: list[float]
    now: datetime
    # The client's id, or one made here once: a batch that falls back to storing its
    # reports one by one stores them under the same ids.
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", str(self.data.id or uuid4()))

    def values(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "site_id": self.site_id,
            "created_at": self.now,
            "class_priors": self.priors,
            "accuracy": self.data.accuracy,
            "samples": self.data.samples,
            "model_signature": self.data.model_signature,
            "model_version": self.data.model_version,
            "drift": self.data.drift,
        }


Stored = tuple[ReportOut, bool]  # the report, and whether it is new (not a replay)


def add_reports(
    database: Database, batch: Sequence[NewReport], retention: int
) -> list[Stored | Exception]:
    """Stores a batch in one transaction; each report's outcome is what `add_report` would
    give it (a report of an unknown site fails alone). Reports of one site take sequence
    numbers in the batch's order."""
    values = [report.values() for report in batch]
    if has_repeated_ids([v["id"] for v in values]):
        return _one_by_one(database, batch, retention)
    try:
        if database.backend == "postgresql":
            with database.reader.connect() as conn:  # autocommit: the statement commits
                outcomes = _store_batch_in_one_statement(conn, values, retention)
        else:
            with database.transaction() as conn:
                outcomes = _store_batch_step_by_step(conn, values, retention)
    except DBAPIError:  # a report id already taken, a deadlock, ...: sort it out one by one
        return _one_by_one(database, batch, retention)
    return outcomes


def _store_batch_in_one_statement(
    conn: Connection, values: list[dict[str, Any]], retention: int
) -> list[Stored | Exception]:
    site_ids = [v["site_id"] for v in values]
    counts = reports_per_site(site_ids)
    latest = {site: values[i] for site, i in last_of_each_site(site_ids).items()}
    sites = list(counts)
    params = {
        "site_ids": sites,
        "counts": [counts[s] for s in sites],
        "seen": [latest[s]["created_at"] for s in sites],
        "signatures": [latest[s]["model_signature"] for s in sites],
        "versions": [latest[s]["model_version"] for s in sites],
        "priors": [priors_to_bytes(latest[s]["class_priors"]) for s in sites],
        "ids": [v["id"] for v in values],
        "report_sites": site_ids,
        "ranks": arrival_ranks(site_ids),
        "created": [v["created_at"] for v in values],
        "class_priors": [json.dumps(v["class_priors"]) for v in values],
        "accuracies": [v["accuracy"] for v in values],
        "samples": [v["samples"] for v in values],
        "report_signatures": [v["model_signature"] for v in values],
        "report_versions": [v["model_version"] for v in values],
        "drifts": [v["drift"] for v in values],
        "retention": retention,
    }
    totals = {row[0]: row[1] for row in conn.execute(_APPEND_BATCH_POSTGRESQL, params)}
    return _outcomes(conn, values, totals)


def _store_batch_step_by_step(
    conn: Connection, values: list[dict[str, Any]], retention: int
) -> list[Stored | Exception]:
    site_ids = [v["site_id"] for v in values]
    latest = {site: values[i] for site, i in last_of_each_site(site_ids).items()}
    totals = {}
    for site, count in reports_per_site(site_ids).items():
        total = conn.execute(_NEXT_SEQ, _counter_params(latest[site], count)).scalar()
        if total is not None:
            totals[site] = total
    seqs = assign_seqs(site_ids, totals)
    rows = [{**v, "seq": seq} for v, seq in zip(values, seqs, strict=True) if seq is not None]
    if rows:
        conn.execute(_INSERT, rows)
    bounds = expiry_bounds(totals, retention)
    if bounds:
        conn.execute(_EXPIRE, [{"b_site": s, "b_upto": upto} for s, upto in bounds.items()])
    return _outcomes(conn, values, totals)


def _outcomes(
    conn: Connection, values: list[dict[str, Any]], totals: dict[str, int]
) -> list[Stored | Exception]:
    """Each report's answer from its site's new total: stored with its seq, or the reason
    its site took no report."""
    site_ids = [v["site_id"] for v in values]
    refused = {s: _why_not(conn, s) for s in set(site_ids) if s not in totals}
    return [
        refused[v["site_id"]] if seq is None else _new(v, seq)
        for v, seq in zip(values, assign_seqs(site_ids, totals), strict=True)
    ]


def _new(values: dict[str, Any], seq: int) -> Stored:
    return ReportOut.model_validate({**values, "seq": seq}), True


def _counter_params(values: dict[str, Any], count: int) -> dict[str, Any]:
    return {
        "site_id": values["site_id"],
        "b_count": count,
        "created_at": values["created_at"],
        "b_signature": values["model_signature"],
        "b_version": values["model_version"],
        "priors_blob": priors_to_bytes(values["class_priors"]),
    }


def _one_by_one(
    database: Database, batch: Sequence[NewReport], retention: int
) -> list[Stored | Exception]:
    outcomes: list[Stored | Exception] = []
    for report in batch:
        try:
            outcomes.append(add_report(database, report, retention))
        except Exception as e:  # this report's own answer (404, 409, 503)
            outcomes.append(e)
    return outcomes


def add_report(database: Database, report: NewReport, retention: int) -> Stored:
    """Stores one report (priors already normalised) and makes it the site's latest.

    Returns the report and whether it is new: a retry with a report id already stored
    returns the stored one, and a different report under that id is a conflict.
    """
    values = report.values()
    site_id, priors = report.site_id, report.priors
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
    return _new(values, seq)


def _append_in_one_statement(
    conn: Connection, values: dict[str, Any], priors: list[float], retention: int
) -> int | None:
    params = {**values, "priors_blob": priors_to_bytes(priors), "retention": retention}
    return conn.execute(_APPEND_POSTGRESQL, params).scalar()


def _append_step_by_step(
    conn: Connection, values: dict[str, Any], priors: list[float], retention: int
) -> int | None:
    seq = conn.execute(_NEXT_SEQ, _counter_params(values, 1)).scalar()
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
