"""/v1/sites/{id}/reports: what a site's data and model look like, over time."""

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from atoll.platform.service.deps import ReadSession
from atoll.registry.api.deps import CallerDep, Now, ReportWriterDep, SettingsDep
from atoll.registry.api.routes import V1, SiteId, checked_priors, created_or_replayed, errors
from atoll.registry.core.metrics import REPORTS
from atoll.registry.crud import reports, sites
from atoll.registry.crud.report_store import NewReport
from atoll.registry.schemas import PageQuery, Report, ReportCreate, ReportPage

router = APIRouter(prefix=V1 + "/sites/{site_id}/reports", tags=["reports"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=created_or_replayed(Report, "report", 403, 404, 409, 413),
    summary="Append a report (the site itself)",
)
async def add_report(
    site_id: SiteId,
    body: ReportCreate,
    caller: CallerDep,
    writer: ReportWriterDep,
    settings: SettingsDep,
    now: Now,
    response: Response,
) -> Report:
    """Priors are normalised; the report becomes the site's latest and counts as a sign of life.
    Beyond the retention limit the oldest reports are dropped. The answer comes once the
    report is committed (with others that arrived meanwhile: group commit)."""
    caller.ensure_may_write(str(site_id))
    priors = checked_priors(body.class_priors, settings.max_classes)
    report, created = await writer.submit(str(site_id), NewReport(str(site_id), body, priors, now))
    if created:
        REPORTS.inc()
    else:
        response.status_code = status.HTTP_200_OK
    return report


@router.get("", responses=errors(404), summary="A site's report history, newest first")
def list_reports(
    site_id: SiteId, page: Annotated[PageQuery, Query()], _caller: CallerDep, session: ReadSession
) -> ReportPage:
    sites.get_site(session, str(site_id))
    rows, cursor = reports.list_reports(session, str(site_id), page)
    return ReportPage(reports=[reports.report_out(r) for r in rows], next_cursor=cursor)


@router.get("/latest", responses=errors(404), summary="A site's latest report")
def latest_report(site_id: SiteId, _caller: CallerDep, session: ReadSession) -> Report:
    site = sites.get_site(session, str(site_id))
    return reports.report_out(reports.latest_report(session, site))
