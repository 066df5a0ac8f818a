"""Probes and metrics, outside /v1 and without a token: orchestrators and Prometheus call
them."""

from fastapi import Response

from atoll.platform.control.api.deps import ServiceDep
from atoll.platform.control.core import metrics
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.control.schemas import Readiness
from atoll.platform.service.deps import DatabaseDep
from atoll.platform.service.health import METRICS_RESPONSES, probe_router
from atoll.platform.service.schema import readiness


def _readiness(database: DatabaseDep, service: ServiceDep) -> Readiness:
    redis_problem = service.redis_problem()
    database_part = readiness(database, SCHEMA)
    problem = database_part.problem or redis_problem
    return Readiness(
        **database_part.model_dump(exclude={"status", "problem"}),
        status="not_ready" if problem else "ready",
        redis=redis_problem or "ok",
        problem=problem,
    )


router = probe_router(
    _readiness,
    Readiness,
    "The database is reachable with its schema current, and Redis is reachable",
)


@router.get(
    "/metrics",
    response_class=Response,
    responses=METRICS_RESPONSES,
    summary="Prometheus metrics",
)
def prometheus(database: DatabaseDep, service: ServiceDep) -> Response:
    body, content_type = metrics.render(database, service)
    return Response(body, media_type=content_type)
