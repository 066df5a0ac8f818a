"""The probes both services serve outside /v1, without a token: `/healthz` (the process is
up), `/readyz` (it can serve: each service says what that takes) and `/metrics`."""

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from atoll.platform.service.schemas import Health, Readiness

METRICS_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/plain": {"schema": {"type": "string"}}}}
}


def probe_router() -> APIRouter:
    """A router with `/healthz`; the service adds `/readyz` and `/metrics`."""
    router = APIRouter(tags=["health"])

    @router.get("/healthz", summary="The process is up")
    async def healthz() -> Health:
        return Health(status="ok")

    return router


def readiness_responses(model: type[Readiness]) -> dict[int | str, dict[str, Any]]:
    return {
        200: {"model": model, "description": "ready"},
        503: {"model": model, "description": "not ready: see `problem`"},
    }


def readiness_response(body: Readiness) -> JSONResponse:
    return JSONResponse(body.model_dump(), status_code=503 if body.problem else 200)
