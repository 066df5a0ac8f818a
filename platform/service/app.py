"""The FastAPI application each Atoll API service (the registry, the control plane) is
built as: its /v1 routes and probes, its settings in `app.state`, errors as JSON."""

from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager

from fastapi import APIRouter, FastAPI

from atoll.platform.core.version import atoll_version
from atoll.platform.service.errors import install_error_handlers
from atoll.platform.service.settings import ServiceSettings


def service_app(
    settings: ServiceSettings,
    routers: Iterable[APIRouter],
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]],
    *,
    title: str,
    summary: str,
    description: str,
) -> FastAPI:
    app = FastAPI(
        title=title,
        version=atoll_version(),
        summary=summary,
        description=description,
        lifespan=lifespan,
    )
    app.state.settings = settings
    for router in routers:
        app.include_router(router)
    install_error_handlers(app)
    return app
