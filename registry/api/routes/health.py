"""Probes and metrics, outside /v1 and without auth: load balancers and Prometheus call them."""

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from atoll.registry.api.deps import DatabaseDep, Now, SettingsDep
from atoll.registry.core import metrics
from atoll.registry.crud.sites import count_by_status
from atoll.registry.migrate import schema_state
from atoll.registry.schemas import Health, Readiness

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
    try:
        with database.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        state = schema_state(database.engine)
    except SQLAlchemyError as e:
        reason = f"unreachable: {type(e).__name__}"
        body = Readiness(
            status="not_ready",
            database=reason,
            schema_revision=[],
            schema_head=[],
            problem=f"the database is {reason}",
        )
        return JSONResponse(body.model_dump(), status_code=503)
    problem = state.problem()
    body = Readiness(
        status="not_ready" if problem else "ready",
        database=database.backend,
        schema_revision=list(state.current),
        schema_head=list(state.head),
        problem=problem,
    )
    return JSONResponse(body.model_dump(), status_code=503 if problem else 200)


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
