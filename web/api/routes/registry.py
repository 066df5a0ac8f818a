"""The registry: the neighbours of any site (k of them, among the sites seen within a
window: the registry's liveness window, or one asked for) and model lineage."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from atoll.platform.service.client import ServiceError
from atoll.web.api.deps import AppDep, SessionDep, render
from atoll.web.backends import Fetched

router = APIRouter()
MAX_K = 100
MAX_WINDOW_MIN = 366 * 24 * 60  # what the registry accepts


@router.get("/registry", response_class=HTMLResponse)
def registry_page(
    request: Request,
    web: AppDep,
    session: SessionDep,
    site: str = "",
    k: str = "5",
    window: str = "",
    model: str = "",
) -> HTMLResponse:
    registry, client = web.backends.registry, web.backends.registry_client
    errors: dict[str, str] = {}
    try:
        count = int(k)
        if not 1 <= count <= MAX_K:
            raise ValueError
    except ValueError:
        errors["k"] = f"must be a whole number from 1 to {MAX_K}"
        count = 5
    window_s = None
    if window.strip():
        try:
            minutes = float(window)
            if not 0 < minutes <= MAX_WINDOW_MIN:
                raise ValueError
            window_s = minutes * 60
        except ValueError:
            errors["window"] = f"must be a number of minutes above 0, at most {MAX_WINDOW_MIN}"
    site = site.strip()
    neighbours = None
    if site and not errors:
        try:
            found = registry.fetch(f"registry-site:{site}", lambda: client.find_site(site))
        except ServiceError as e:
            found = Fetched(None, False, None, str(e))
        if found.value is None and not found.stale:
            errors["site"] = f"no registered site is named {site}"
        elif found.value is not None:
            site_id = found.value.id
            try:
                neighbours = registry.fetch(
                    f"neighbours:{site_id}:{count}:{window_s}",
                    lambda: client.neighbours(site_id, k=count, window_s=window_s),
                )
            except ServiceError as e:
                errors["site"] = e.problems[0].problem if e.problems else str(e)
    models = registry.fetch("models", lambda: client.list_models(limit=25))
    lineage = None
    if model:
        try:
            lineage = registry.fetch(f"lineage:{model}", lambda: client.lineage(model))
        except ServiceError as e:
            errors["model"] = e.problems[0].problem if e.problems else str(e)
    return render(
        request,
        "registry.html",
        session,
        site=site,
        k=count,
        k_text=k,
        window_text=window,
        errors=errors,
        neighbours=neighbours,
        models=models,
        model=model,
        lineage=lineage,
        max_k=MAX_K,
    )
