"""Probes and metrics, outside /v1 and without a token: orchestrators and Prometheus call
them."""

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from atoll.platform.control.api.deps import DatabaseDep, ServiceDep
from atoll.platform.control.core import metrics
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.control.schemas import Readiness
from atoll.platform.service.schema import readiness
from atoll.platform.service.schemas import Health

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
    summary="The database is reachable with its schema current, and Redis is reachable",
)
async def readyz(database: DatabaseDep, service: ServiceDep) -> Response:
    body = await run_in_threadpool(_readiness, database, service)
    return JSONResponse(body.model_dump(), status_code=503 if body.problem else 200)


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


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    summary="Prometheus metrics",
)
def prometheus(database: DatabaseDep, service: ServiceDep) -> Response:
    body, content_type = metrics.render(database, service)
    return Response(body, media_type=content_type)
