"""Sites: the list (filtered, sorted and paged by the control plane), one site with what
the registry knows of it, registering a new one, drain / activate / remove, tokens."""

from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from atoll.platform.control.schemas import SiteOut
from atoll.platform.service.client import ServiceError, ServiceUnavailable
from atoll.registry.schemas import Site as RegistrySite
from atoll.web.api.deps import App, AppDep, SessionDep, WriterDep, render, render_listing
from atoll.web.backends import Fetched
from atoll.web.flash import Flash
from atoll.web.views import svg
from atoll.web.views.paging import Column, Pager, page_request, query_url

router = APIRouter()
COLUMNS = (
    Column("name", "Site"),
    Column("state", "State"),
    Column("online", "Online"),
    Column("region", "Region"),
    Column("last_seen", "Last heartbeat"),
)
FILTERS = ("state", "region", "online", "q")
_REPORTS = 100


@router.get("/sites", response_class=HTMLResponse)
def sites(request: Request, web: AppDep, session: SessionDep) -> HTMLResponse:
    query = dict(request.query_params)
    paging = page_request(query, [c.key for c in COLUMNS], "name")
    filters = {k: query.get(k, "").strip() for k in FILTERS}
    if filters["state"] not in ("", "active", "draining", "removed"):
        filters["state"] = ""
    if filters["online"] not in ("", "yes", "no"):
        filters["online"] = ""
    online = {"yes": True, "no": False}.get(filters["online"])
    client = web.backends.control_client
    key = "sites:" + query_url(
        "", {**filters, "sort": paging.sort, "page": str(paging.page), "size": str(paging.size)}
    )
    page = web.backends.control.fetch(
        key,
        lambda: client.sites(
            limit=paging.size,
            offset=paging.offset,
            sort=paging.sort,
            state=filters["state"] or None,
            region=filters["region"] or None,
            online=online,
            name=filters["q"] or None,
        ),
    )
    params = {**filters, "size": str(paging.size), "sort": paging.sort}
    total = page.value.total if page.value else 0
    pager = Pager(paging, total, len(page.value.sites) if page.value else 0)
    return render_listing(
        request,
        "sites.html",
        session,
        "/sites",
        pager,
        params,
        page=page,
        filters=filters,
        columns=COLUMNS,
    )


@router.get("/sites/new", response_class=HTMLResponse)
def new_site_form(request: Request, session: SessionDep) -> HTMLResponse:
    return render(request, "site_new.html", session, values={}, errors={})


@router.post("/sites/new", response_class=HTMLResponse)
def register_site(
    request: Request,
    web: AppDep,
    session: WriterDep,
    name: Annotated[str, Form(max_length=200)] = "",
    region: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    name, region = name.strip(), region.strip()
    values = {"name": name, "region": region}
    try:
        created = web.backends.registry.call(
            lambda: web.backends.registry_client.register_site(name, region)
        )
    except ServiceError as e:
        errors = {p.field: p.problem for p in e.problems if p.field in values}
        if not errors:
            errors["_general"] = str(e)
        return render(request, "site_new.html", session, 422, values=values, errors=errors)
    except ServiceUnavailable as e:
        errors = {"_general": f"{e}: nothing was registered"}
        return render(request, "site_new.html", session, 503, values=values, errors=errors)
    declared = _declare(web, name, region)
    hint = (
        "Give it to the site's agent as ATOLL_REGISTRY_TOKEN (with `name: "
        f"{name}` in its site.yaml), then start it: atoll edge run --config site.yaml"
    )
    web.flashes.add(
        session.id,
        Flash(
            "secret",
            f"Site {name} is registered. This is its token; it is shown only now.",
            created.token,
            hint,
        ),
    )
    if declared:
        web.flashes.add(session.id, Flash("error", declared))
    return RedirectResponse(f"/sites/{name}", status_code=303)


def _declare(web: App, name: str, region: str) -> str | None:
    """Tell the control plane to expect the site; a problem, or None."""
    try:
        web.backends.control.call(lambda: web.backends.control_client.declare_site(name, region))
    except ServiceError as e:
        if e.status != 409:
            return f"the control plane did not take the site: {e}"
    except ServiceUnavailable as e:
        return f"{e}: the site shows once its agent joins"
    return None


@router.get("/sites/{name}", response_class=HTMLResponse)
def site_page(name: str, request: Request, web: AppDep, session: SessionDep) -> HTMLResponse:
    control, registry = web.backends.control, web.backends.registry
    try:
        site = control.fetch(f"site:{name}", lambda: web.backends.control_client.site(name))
    except ServiceError as e:
        if e.status != 404:
            raise
        site = Fetched(None, False, None)
    try:
        registered = registry.fetch(
            f"registry-site:{name}", lambda: web.backends.registry_client.find_site(name)
        )
    except ServiceError:
        registered = Fetched(None, False, None)
    if site.value is None and registered.value is None and not (site.stale or registered.stale):
        raise HTTPException(
            404, f"no site {name}: no agent has joined as it and it is not registered"
        )
    details = _registry_details(web, registered.value) if registered.value else {}
    job = None
    if site.value is not None and site.value.job:
        job_id = site.value.job
        job = control.fetch(f"job:{job_id}", lambda: web.backends.control_client.job(job_id))
    part = None
    if job is not None and job.value is not None:
        part = next((p for p in job.value.sites if p.site == name), None)
    return render(
        request,
        "site.html",
        session,
        name=name,
        site=site,
        registered=registered,
        job=job,
        part=part,
        **details,
    )


def _registry_details(web: App, registered: RegistrySite) -> dict[str, Any]:
    registry, client = web.backends.registry, web.backends.registry_client
    site_id = registered.id
    reports = registry.fetch(f"reports:{site_id}", lambda: client.reports(site_id, limit=_REPORTS))
    tokens = registry.fetch(f"tokens:{site_id}", lambda: client.list_tokens(site_id))
    try:
        neighbours = registry.fetch(
            f"neighbours:{site_id}", lambda: client.neighbours(site_id, k=5)
        )
        neighbours_problem = None
    except ServiceError as e:
        neighbours, neighbours_problem = None, e.problems[0].problem if e.problems else str(e)
    history = list(reversed(reports.value.reports)) if reports.value else []
    accuracy_points = [(r.created_at.timestamp(), r.accuracy) for r in history]
    priors = history[-1].class_priors if history else []
    return {
        "reports": reports,
        "history": history,
        "accuracy_line": svg.polyline(accuracy_points),
        "prior_bars": svg.bars(priors),
        "priors": priors,
        "tokens": tokens,
        "neighbours": neighbours,
        "neighbours_problem": neighbours_problem,
    }


def _site_action(web: App, session_id: str, name: str, verb: str, act: Any) -> Response:
    try:
        found: SiteOut = web.backends.control.call(act)
        web.flashes.add(session_id, Flash("ok", f"Site {name} is now {found.state}."))
    except ServiceError as e:
        if e.status == 404:
            raise HTTPException(404, f"no agent has joined as site {name}") from e
        web.flashes.add(
            session_id,
            Flash("error", f"Could not {verb} {name}: {e.message if hasattr(e, 'message') else e}"),
        )
    except ServiceUnavailable as e:
        web.flashes.add(
            session_id, Flash("error", f"Could not {verb} {name}: {e}. Nothing changed.")
        )
    return RedirectResponse(f"/sites/{name}", status_code=303)


@router.post("/sites/{name}/drain")
def drain(name: str, web: AppDep, session: WriterDep) -> Response:
    return _site_action(
        web, session.id, name, "drain", lambda: web.backends.control_client.drain(name)
    )


@router.post("/sites/{name}/activate")
def activate(name: str, web: AppDep, session: WriterDep) -> Response:
    return _site_action(
        web, session.id, name, "activate", lambda: web.backends.control_client.activate(name)
    )


@router.get("/sites/{name}/remove", response_class=HTMLResponse)
def remove_confirm(name: str, request: Request, session: SessionDep) -> HTMLResponse:
    return render(request, "site_remove.html", session, name=name)


@router.post("/sites/{name}/remove")
def remove(
    name: str,
    web: AppDep,
    session: WriterDep,
    confirm: Annotated[str, Form(max_length=200)] = "",
    deregister: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    if confirm.strip() != name:
        web.flashes.add(
            session.id, Flash("error", f"Not removed: type the site's name, {name}, to confirm.")
        )
        return RedirectResponse(f"/sites/{name}/remove", status_code=303)
    response = _site_action(
        web, session.id, name, "remove", lambda: web.backends.control_client.remove(name)
    )
    if deregister:
        registry, client = web.backends.registry, web.backends.registry_client
        try:
            found = registry.call(lambda: client.find_site(name))
            if found is not None:
                registry.call(lambda: client.deregister_site(found.id))
                web.flashes.add(
                    session.id, Flash("ok", f"Site {name} is deregistered: its tokens are revoked.")
                )
        except (ServiceError, ServiceUnavailable) as e:
            web.flashes.add(session.id, Flash("error", f"Not deregistered from the registry: {e}"))
    return response


def _registered(web: App, name: str) -> RegistrySite:
    try:
        found = web.backends.registry.call(lambda: web.backends.registry_client.find_site(name))
    except ServiceUnavailable as e:
        raise HTTPException(503, f"{e}: nothing changed") from e
    if found is None:
        raise HTTPException(404, f"site {name} is not registered")
    return found


@router.post("/sites/{name}/tokens")
def rotate_token(
    name: str,
    web: AppDep,
    session: WriterDep,
    revoke_others: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    site = _registered(web, name)
    client = web.backends.registry_client
    try:
        created = web.backends.registry.call(
            lambda: client.create_token(site.id, bool(revoke_others))
        )
    except (ServiceError, ServiceUnavailable) as e:
        web.flashes.add(session.id, Flash("error", f"No token issued: {e}"))
        return RedirectResponse(f"/sites/{name}#tokens", status_code=303)
    what = "its other tokens are revoked" if revoke_others else "its other tokens still work"
    web.flashes.add(
        session.id,
        Flash(
            "secret",
            f"A new token for {name} ({what}). It is shown only now.",
            created.token,
            "Give it to the site's agent as ATOLL_REGISTRY_TOKEN.",
        ),
    )
    return RedirectResponse(f"/sites/{name}#tokens", status_code=303)


@router.post("/sites/{name}/tokens/{token_id}/revoke")
def revoke_token(name: str, token_id: str, web: AppDep, session: WriterDep) -> Response:
    site = _registered(web, name)
    client = web.backends.registry_client
    try:
        web.backends.registry.call(lambda: client.revoke_token(site.id, token_id))
        web.flashes.add(session.id, Flash("ok", f"Token {token_id} of {name} is revoked."))
    except (ServiceError, ServiceUnavailable) as e:
        web.flashes.add(session.id, Flash("error", f"Not revoked: {e}"))
    return RedirectResponse(f"/sites/{name}#tokens", status_code=303)
