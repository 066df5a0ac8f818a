"""The overview: how many sites are online, offline and draining, the running jobs, the
last events, and a banner when a service is unreachable."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse

from atoll.platform.service.client import ServiceUnavailable
from atoll.web.api.deps import AppDep, SessionDep, render

router = APIRouter()
_EVENTS_SHOWN = 12


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, web: AppDep, session: SessionDep) -> HTMLResponse:
    control, client = web.backends.control, web.backends.control_client
    counts = {
        "all": control.fetch("sites:all", lambda: client.sites(limit=1).total),
        "online": control.fetch("sites:online", lambda: client.sites(limit=1, online=True).total),
        "offline": control.fetch(
            "sites:offline", lambda: client.sites(limit=1, online=False).total
        ),
        "draining": control.fetch(
            "sites:draining", lambda: client.sites(limit=1, state="draining").total
        ),
    }
    running = control.fetch("jobs:running", lambda: client.jobs(state="running", limit=10))
    pending = control.fetch("jobs:pending", lambda: client.jobs(state="pending", limit=1).total)
    recent = [e for e in web.hub.recent() if e.kind in ("job", "site", "upstream")]
    return render(
        request,
        "overview.html",
        session,
        counts=counts,
        running=running,
        pending=pending,
        events=recent[-_EVENTS_SHOWN:][::-1],
    )


@router.get("/healthz", include_in_schema=False)
def healthz() -> dict[str, str]:
    """The process answers (no session needed): what orchestrators probe."""
    return {"status": "ok"}


@router.get("/readyz", include_in_schema=False)
def readyz(web: AppDep) -> JSONResponse:
    """Ready when the control plane answers: the dashboard shows nothing without it."""
    try:
        ready = web.backends.control_client.readiness()
        problem = ready.problem if ready.status != "ready" else None
    except ServiceUnavailable as e:
        problem = str(e)
    body = {"status": "not_ready" if problem else "ready", "control": problem or "ok"}
    return JSONResponse(body, status_code=503 if problem else 200)
