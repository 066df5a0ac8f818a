"""Reading reports: a site's latest, and its history newest first. (Appending one is
`report_store`, the hot write path.)"""

from sqlalchemy import select
from sqlalchemy.orm import Session

from atoll.platform.service.errors import Invalid, NotFound
from atoll.registry.models import Report, Site
from atoll.registry.pagination import CursorError, decode_cursor, encode_cursor
from atoll.registry.schemas import PageQuery
from atoll.registry.schemas import Report as ReportOut


def latest_report(session: Session, site: Site) -> Report:
    report = session.scalar(
        select(Report).where(Report.site_id == site.id).order_by(Report.seq.desc()).limit(1)
    )
    if report is None:
        raise NotFound(f"site {site.id} has not reported yet", "site_id", "path")
    return report


def list_reports(
    session: Session, site_id: str, page: PageQuery
) -> tuple[list[Report], str | None]:
    """Newest first."""
    query = select(Report).where(Report.site_id == site_id)
    if page.cursor is not None:
        try:
            (before,) = decode_cursor(page.cursor, (int,))
        except CursorError as e:
            raise Invalid(str(e), "cursor", "query") from e
        query = query.where(Report.seq < before)
    rows = list(session.scalars(query.order_by(Report.seq.desc()).limit(page.limit + 1)))
    if len(rows) <= page.limit:
        return rows, None
    return rows[: page.limit], encode_cursor([rows[page.limit - 1].seq])


def report_out(report: Report) -> ReportOut:
    return ReportOut.model_validate(report, from_attributes=True)
