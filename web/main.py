"""The dashboard's FastAPI application.

`create_app()` reads `ATOLL_*` settings; uvicorn builds it as a factory
(`atoll web serve`). It refuses to start without an admin token and a session secret.
"""

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from atoll.platform.core.version import atoll_version
from atoll.platform.service.live import Hub
from atoll.web.api.deps import App, LoginRequired, Refused, login_url, render
from atoll.web.api.routes import auth, events, jobs, overview, registry, sites, world
from atoll.web.backends import Backends
from atoll.web.core.config import WebSettings, web_settings
from atoll.web.core.session import COOKIE, Sessions
from atoll.web.live import Upstream
from atoll.web.views.rates import SendRates

log = logging.getLogger("atoll.web")
STATIC = Path(__file__).resolve().parent / "static"
# Only this origin's own files; inline scripts and eval never run (htmx is told not to
# use eval); pages cannot be framed; forms post only here.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


class StartupRefused(RuntimeError):
    """The dashboard must not run as configured; the message says why."""


def create_app(settings: WebSettings | None = None) -> FastAPI:
    settings = settings or web_settings()
    problem = settings.startup_problem()
    if problem:
        raise StartupRefused(problem)
    assert settings.web_secret is not None
    hub = Hub()
    rates = SendRates()
    backends = Backends(settings)
    upstream = Upstream(
        settings.control_url, settings.service_token, hub, rates.observe, silence_s=30.0
    )
    web = App(
        settings,
        Sessions(
            settings.web_secret.get_secret_value(), settings.session_idle_s, settings.session_max_s
        ),
        backends,
        hub,
        upstream,
        rates,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        upstream.start()
        try:
            yield
        finally:
            upstream.stop()
            backends.close()

    app = FastAPI(
        title="Atoll dashboard",
        version=atoll_version(),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.web = web
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for module in (auth, overview, sites, jobs, world, registry, events):
        app.include_router(module.router)

    @app.middleware("http")
    async def sessions_and_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        now = time.time()
        cookie = request.cookies.get(COOKIE)
        session = web.sessions.decode(cookie, now)
        request.state.session = session
        request.state.session_ended = cookie is not None and session is None
        request.state.new_session = None
        response = await call_next(request)
        new = request.state.new_session  # set by login (a Session) and logout (False)
        if new is False:
            response.delete_cookie(COOKIE, path="/")
        elif new is not None or (session and (new := web.sessions.touched(session, now))):
            set_session_cookie(response, request, web, web.sessions.encode(new))
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["X-Frame-Options"] = "DENY"
        return response

    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, LoginRequired)
        url = login_url(exc.next_path, exc.ended)
        if request.headers.get("hx-request"):
            return Response(status_code=204, headers={"HX-Redirect": url})
        if request.url.path == "/events":
            return Response("log in first", status_code=401)
        return RedirectResponse(url, status_code=303)

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Exception) -> HTMLResponse:
        assert isinstance(exc, Refused)
        log.warning("refused %s %s: %s", request.method, request.url.path, exc.message)
        return render(
            request, "error.html", request.state.session, 403, title="Refused", message=exc.message
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        title = {404: "Not found", 405: "Not allowed"}.get(exc.status_code, "Error")
        return render(
            request,
            "error.html",
            request.state.session,
            exc.status_code,
            title=title,
            message=str(exc.detail),
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> HTMLResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return render(
            request,
            "error.html",
            request.state.session,
            500,
            title="Something went wrong",
            message="The dashboard met an error it did not expect; it is in its log.",
        )

    return app


def set_session_cookie(response: Response, request: Request, web: App, value: str) -> None:
    secure = web.settings.secure_cookies
    if secure is None:
        secure = request.url.scheme == "https"
    response.set_cookie(
        COOKIE,
        value,
        max_age=int(web.settings.session_max_s),
        path="/",
        httponly=True,
        samesite="strict",
        secure=secure,
    )
