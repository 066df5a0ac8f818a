"""Logging in with a token (admin or viewer) and out. The token is read from the form's
body once, compared by hash, and never stored, logged or sent back."""

import threading
import time
from collections import deque
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from atoll.web.api.deps import AppDep, CsrfDep, Refused, own_origin, render
from atoll.web.core.session import role_of, safe_next, same_origin

router = APIRouter()
_FAILURES_PER_MINUTE = 10


class Throttle:
    """At most `limit` failed logins a minute from one address: guessing a 256-bit token
    is hopeless anyway, but a flood of tries is worth refusing early."""

    def __init__(self, limit: int = _FAILURES_PER_MINUTE) -> None:
        self.limit = limit
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def blocked(self, who: str, now: float) -> bool:
        with self._lock:
            recent = self._failures.get(who)
            while recent and now - recent[0] > 60:
                recent.popleft()
            return bool(recent) and len(recent) >= self.limit  # type: ignore[arg-type]

    def failed(self, who: str, now: float) -> None:
        with self._lock:
            if len(self._failures) > 10_000:
                self._failures.clear()
            self._failures.setdefault(who, deque()).append(now)


_throttle = Throttle()


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/", ended: bool = False) -> Response:
    if request.state.session is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    notice = "Your session has ended. Log in again to go on." if ended else None
    return render(request, "login.html", None, next=safe_next(next), notice=notice)


@router.post("/login", response_class=HTMLResponse)
def login(
    request: Request,
    web: AppDep,
    token: Annotated[str, Form(max_length=512)] = "",
    next: Annotated[str, Form(max_length=2048)] = "/",
) -> Response:
    if not same_origin(request.headers.get("origin"), own_origin(request)):
        raise Refused("this login did not come from the dashboard's own login page (Origin)")
    who = request.client.host if request.client else "?"
    now = time.time()
    if _throttle.blocked(who, now):
        return render(
            request,
            "login.html",
            None,
            429,
            next=safe_next(next),
            error="Too many failed logins from here; wait a minute.",
        )
    role = role_of(token, web.settings.role_hashes()) if token else None
    if role is None:
        _throttle.failed(who, now)
        return render(
            request,
            "login.html",
            None,
            401,
            next=safe_next(next),
            error="That is not an admin or viewer token of this dashboard.",
        )
    request.state.new_session = web.sessions.new(role, now)
    return RedirectResponse(safe_next(next), status_code=303)


@router.post("/logout")
def logout(request: Request, web: AppDep, session: CsrfDep) -> Response:
    """Any logged-in person may log out; the request still needs its origin and CSRF."""
    web.sessions.end(session, time.time())
    request.state.new_session = False
    return RedirectResponse("/login", status_code=303)
