"""The probes both services serve outside /v1, without a token: `/healthz` (the process is
up), `/readyz` (it can serve: each service says what that takes) and `/metrics`."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse

from atoll.platform.service.schemas import Health, Readiness

METRICS_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/plain": {"schema": {"type": "string"}}}}
}


def probe_router(ready: Callable[..., Readiness], model: type[Readiness], what: str) -> APIRouter:
    """`/healthz` and `/readyz`, whose answer `ready` gives (a route dependency: FastAPI
    fills in its own dependencies, and runs it in its thread pool); `what` says what ready
    means. The service adds `/metrics`."""
    router = APIRouter(tags=["health"])

    @router.get("/healthz", summary="The process is up")
    async def healthz() -> Health:
        return Health(status="ok")

    @router.get(
        "/readyz",
        responses={
            200: {"model": model, "description": "ready"},
            503: {"model": model, "description": "not ready: see `problem`"},
        },
        summary=what,
    )
    async def readyz(body: Annotated[Readiness, Depends(ready)]) -> Response:
        return JSONResponse(body.model_dump(), status_code=503 if body.problem else 200)

    return router
