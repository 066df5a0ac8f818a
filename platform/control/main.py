"""The control plane's FastAPI application.

`create_app()` reads `ATOLL_*` settings; uvicorn can build it as a factory
(`uvicorn --factory atoll.platform.control.main:create_app`). Startup refuses a
database whose schema is not current and a missing admin token; Redis may come later
(the service waits for it with backoff).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from atoll.platform.control.api.main import api_router
from atoll.platform.control.api.routes import health
from atoll.platform.control.core.config import ControlSettings, control_settings
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.control.service import ControlService
from atoll.platform.service.app import service_app
from atoll.platform.service.live import Hub
from atoll.platform.service.server import checked_database


def create_app(settings: ControlSettings | None = None) -> FastAPI:
    settings = settings or control_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with checked_database(settings, SCHEMA) as database:
            service = ControlService(settings, database, app.state.hub)
            app.state.database, app.state.service = database, service
            try:
                service.start()
                yield
            finally:
                service.stop()

    app = service_app(
        settings,
        [api_router, health.router],
        lifespan,
        title="Atoll control plane",
        summary="Jobs, sites and live telemetry of an Atoll deployment.",
        description=(
            "Submit a job (a `GeoJob`: the same spec `atoll train --sites` and `atoll sim` "
            "run), follow it per site, cancel it; drain, activate or remove sites. Writes need "
            "`Authorization: Bearer <admin token>` (`ATOLL_ADMIN_TOKEN`); reads need none. "
            "`GET /v1/events` streams telemetry live (server-sent events); "
            "`GET /v1/jobs/{job_id}/telemetry` has the history. Errors are JSON (`ErrorBody`)."
        ),
    )
    app.state.hub = Hub()
    return app
