"""What routes depend on: the session (a page needs one, a write needs an admin's), the
CSRF and Origin checks every write passes, the services, and rendering."""

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from atoll.platform.service.live import Hub
from atoll.web.backends import Backends
from atoll.web.core.config import WebSettings
from atoll.web.core.session import CSRF_FIELD, CSRF_HEADER, Session, Sessions, same_origin
from atoll.web.flash import Flashes
from atoll.web.live import Upstream
from atoll.web.views import format as fmt
from atoll.web.views.paging import Pager, aria_sort, sort_href
from atoll.web.views.rates import SendRates

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parent.parent / "templates")
TEMPLATES.env.filters.update(
    iec=fmt.iec_bytes,
    number=fmt.number,
    percent=fmt.percent,
    utc=fmt.utc,
    iso=fmt.iso,
    duration=fmt.duration,
)
TEMPLATES.env.globals.update(status=fmt.status, relative=fmt.relative)


class LoginRequired(Exception):
    """No valid session: to the login page, and back to `next` after it."""

    def __init__(self, next_path: str, ended: bool) -> None:
        self.next_path = next_path
        self.ended = ended


class Refused(Exception):
    """A write that must not happen: 403, and nothing changed."""

    def __init__(self, message: str) -> None:
        self.message = message


@dataclass
class App:
    """What the dashboard holds while it runs (app.state.web)."""

    settings: WebSettings
    sessions: Sessions
    backends: Backends
    hub: Hub
    upstream: Upstream
    rates: SendRates
    flashes: Flashes = field(default_factory=Flashes)


def get_app(request: Request) -> App:
    web: App = request.app.state.web
    return web


AppDep = Annotated[App, Depends(get_app)]


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"


def wanted_path(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def login_url(next_path: str, ended: bool = False) -> str:
    return f"/login?next={quote(next_path, safe='/')}" + ("&ended=1" if ended else "")


async def require_session(request: Request) -> Session:
    session: Session | None = request.state.session
    if session is None:
        target = request.headers.get("hx-current-url") or wanted_path(request)
        if target.startswith("http"):
            target = "/" + target.split("/", 3)[-1] if target.count("/") >= 3 else "/"
        raise LoginRequired(target, request.state.session_ended)
    return session


SessionDep = Annotated[Session, Depends(require_session)]


async def require_csrf(request: Request, session: SessionDep) -> Session:
    """Every state-changing request: from the dashboard's own origin, with the session's
    CSRF token. Anything else is refused before anything changes."""
    web = get_app(request)
    if not same_origin(request.headers.get("origin"), own_origin(request)):
        raise Refused("this request did not come from the dashboard's own pages (Origin)")
    given = request.headers.get(CSRF_HEADER)
    if given is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not web.sessions.csrf_ok(session, given):
        raise Refused("the form's security token is missing or wrong: reload the page")
    return session


CsrfDep = Annotated[Session, Depends(require_csrf)]


async def require_writer(session: CsrfDep) -> Session:
    """A change to the federation: the checks above, by an admin."""
    if not session.may_write:
        raise Refused("this login is read-only (a viewer token): it cannot change anything")
    return session


WriterDep = Annotated[Session, Depends(require_writer)]


def render(
    request: Request,
    template: str,
    session: Session | None,
    status_code: int = 200,
    **values: Any,
) -> HTMLResponse:
    web = get_app(request)
    now = time.time()
    partial = request.headers.get("hx-request") == "true"
    context = {
        "session": session,
        "may_write": bool(session and session.may_write),
        "csrf": web.sessions.csrf_token(session) if session else "",
        "csrf_field": CSRF_FIELD,
        "problems": web.backends.problems(),
        "upstream": web.upstream,
        # A partial refresh (htmx) leaves them for the page the person is going to.
        "flashes": web.flashes.take(session.id) if session and not partial else [],
        "now": fmt.as_datetime(now),
        "path": request.url.path,
        **values,
    }
    response = TEMPLATES.TemplateResponse(request, template, context, status_code=status_code)
    response.headers["Cache-Control"] = "no-store"
    return response


def render_listing(
    request: Request,
    template: str,
    session: Session | None,
    path: str,
    pager: Pager,
    params: dict[str, str],
    **values: Any,
) -> HTMLResponse:
    """A paged, sortable listing: `render` with the page links and the sort helpers."""
    return render(
        request,
        template,
        session,
        pager=pager,
        paging=pager.request,
        params=params,
        sort_href=sort_href,
        aria_sort=aria_sort,
        page_links=pager.links(path, params),
        **values,
    )
