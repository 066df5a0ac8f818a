"""Probes and metrics, outside /v1 and without auth: load balancers and Prometheus call them."""

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.service.schema import readiness
from atoll.platform.service.schemas import Health, Readiness
from atoll.registry.api.deps import DatabaseDep, Now, SettingsDep
from atoll.registry.core import metrics
from atoll.registry.crud.sites import count_by_status
from atoll.registry.migrate import SCHEMA

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is up")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    responses={
        200: {"model": Readiness, "description": "ready"},
        503: {"model": Readiness, "description": "not ready: see `problem`"},
    },
    summary="The database is reachable and its schema current",
)
def readyz(database: DatabaseDep) -> Response:
    body = readiness(database, SCHEMA)
    return JSONResponse(body.model_dump(), status_code=503 if body.problem else 200)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
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
