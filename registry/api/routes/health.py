"""Probes and metrics, outside /v1 and without auth: load balancers and Prometheus call them."""

from fastapi import Response
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.service.deps import DatabaseDep
from atoll.platform.service.health import METRICS_RESPONSES, probe_router
from atoll.platform.service.schema import readiness
from atoll.platform.service.schemas import Readiness
from atoll.registry.api.deps import Now, SettingsDep
from atoll.registry.core import metrics
from atoll.registry.crud.sites import count_by_status
from atoll.registry.migrate import SCHEMA


def _readiness(database: DatabaseDep) -> Readiness:
    return readiness(database, SCHEMA)


router = probe_router(_readiness, Readiness, "The database is reachable and its schema current")


@router.get(
    "/metrics",
    response_class=Response,
    responses=METRICS_RESPONSES,
    summary="Prometheus metrics",
)
def prometheus(database: DatabaseDep, settings: SettingsDep, now: Now) -> Response:
    def counts() -> dict[str, int]:
        # Without the database, the process metrics are still worth scraping.
        try:
            with database.reading() as session:
                return count_by_status(session, now, settings.liveness_window_s)
        except SQLAlchemyError:
            return {}

    body, content_type = metrics.render(counts)
    return Response(body, media_type=content_type)
