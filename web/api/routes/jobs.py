"""Jobs: the list (filtered and paged by the control plane), the submit form (fields or a
YAML job file), one job live, its chart data, cancel."""

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from atoll.platform.control.schemas import JobOut
from atoll.platform.service.client import ServiceError, ServiceUnavailable
from atoll.web.api.deps import App, AppDep, SessionDep, WriterDep, render, render_listing
from atoll.web.flash import Flash
from atoll.web.views import jobform, series
from atoll.web.views.paging import Column, Pager, page_request, query_url

router = APIRouter()
STATES = ("pending", "running", "paused", "completed", "failed", "cancelled")
COLUMNS = (Column("submitted", "Submitted"),)


@router.get("/jobs", response_class=HTMLResponse)
def jobs(request: Request, web: AppDep, session: SessionDep) -> HTMLResponse:
    query = dict(request.query_params)
    paging = page_request(query, ["submitted"], "-submitted")
    state = query.get("state", "")
    state = state if state in STATES else ""
    client = web.backends.control_client
    key = "jobs:" + query_url(
        "",
        {"state": state, "sort": paging.sort, "page": str(paging.page), "size": str(paging.size)},
    )
    page = web.backends.control.fetch(
        key,
        lambda: client.jobs(
            state or None, limit=paging.size, offset=paging.offset, sort=paging.sort
        ),
    )
    params = {"state": state, "size": str(paging.size), "sort": paging.sort}
    pager = Pager(
        paging, page.value.total if page.value else 0, len(page.value.jobs) if page.value else 0
    )
    return render_listing(
        request,
        "jobs.html",
        session,
        "/jobs",
        pager,
        params,
        page=page,
        state=state,
        states=STATES,
        summary=job_summary,
    )


def job_summary(job: JobOut) -> dict[str, Any]:
    clocks = [s.clock for s in job.sites]
    accuracies = [
        s.final_accuracy if s.final_accuracy is not None else s.accuracy for s in job.sites
    ]
    known = [a for a in accuracies if a is not None]
    return {
        "clock": min(clocks, default=0),
        "accuracy": sum(known) / len(known) if known else None,
    }


def _form_page(request: Request, session: Any, status: int = 200, **values: Any) -> HTMLResponse:
    values.setdefault("values", jobform.defaults())
    values.setdefault("errors", {})
    values.setdefault("yaml_errors", {})
    values.setdefault("yaml_text", "")
    return render(request, "job_new.html", session, status, fields=jobform.FIELDS, **values)


@router.get("/jobs/new", response_class=HTMLResponse)
def new_job_form(request: Request, session: SessionDep) -> HTMLResponse:
    return _form_page(request, session)


@router.post("/jobs/new", response_class=HTMLResponse)
async def submit_job(request: Request, web: AppDep, session: WriterDep) -> Response:
    form = await request.form()
    if form.get("mode") == "yaml":
        upload = form.get("job_file")
        text = str(form.get("job_yaml") or "")
        if upload is not None and not isinstance(upload, str) and upload.filename:
            raw = await upload.read(jobform.MAX_YAML_BYTES + 1)
            text = raw.decode("utf-8", errors="replace")
        submission = jobform.from_yaml(text, str(form.get("name") or "").strip())
        if not submission.errors:
            return await _submit(request, web, session, submission, yaml_text=text)
        return _form_page(request, session, 422, yaml_errors=submission.errors, yaml_text=text)
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    submission = jobform.from_form(fields)
    if submission.errors:
        return _form_page(request, session, 422, values=submission.values, errors=submission.errors)
    return await _submit(request, web, session, submission)


async def _submit(
    request: Request,
    web: App,
    session: Any,
    submission: jobform.Submission,
    yaml_text: str | None = None,
) -> Response:
    client = web.backends.control_client
    try:
        job = web.backends.control.call(
            lambda: client.submit(submission.spec, name=submission.name)
        )
    except ServiceError as e:
        placed = jobform.place_problems(e.problems)
        if e.status >= 500 or not placed:
            placed = {jobform.GENERAL: str(e)}
        if yaml_text is not None:
            every = "; ".join(
                f"{p.field}: {p.problem}" if p.field else p.problem for p in e.problems
            )
            problem = {"job_file": every or str(e)}
            return _form_page(request, session, 422, yaml_errors=problem, yaml_text=yaml_text)
        return _form_page(request, session, 422, values=submission.values, errors=placed)
    except ServiceUnavailable as e:
        problem = {jobform.GENERAL: f"{e}: the job was not submitted"}
        if yaml_text is not None:
            return _form_page(request, session, 503, yaml_errors=problem, yaml_text=yaml_text)
        return _form_page(request, session, 503, values=submission.values, errors=problem)
    web.flashes.add(session.id, Flash("ok", f"Job {job.name} is submitted."))
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)


def _job(web: App, job_id: str) -> Any:
    try:
        found = web.backends.control.fetch(
            f"job:{job_id}", lambda: web.backends.control_client.job(job_id)
        )
    except ServiceError as e:
        if e.status in (404, 422):
            raise HTTPException(404, f"no job {job_id}") from e
        raise
    return found


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(job_id: str, request: Request, web: AppDep, session: SessionDep) -> HTMLResponse:
    found = _job(web, job_id)
    if found.value is None:
        return render(request, "job.html", session, job=None, fetched=found, job_id=job_id)
    job: JobOut = found.value
    return render(
        request,
        "job.html",
        session,
        job=job,
        fetched=found,
        job_id=job_id,
        summary=job_summary(job),
        final=job.state in ("completed", "failed", "cancelled"),
    )


@router.get("/jobs/{job_id}/series.json")
def job_series(job_id: str, web: AppDep, session: SessionDep) -> JSONResponse:
    """What the job page's charts start from: the telemetry history, bounded; live events
    extend it."""
    client = web.backends.control_client
    found = _job(web, job_id)
    if found.value is None:
        return JSONResponse({"error": "the control plane is unreachable"}, status_code=503)
    job: JobOut = found.value
    try:
        samples, complete = web.backends.control.call(lambda: series.read_history(client, job_id))
    except ServiceUnavailable as e:
        return JSONResponse({"error": str(e)}, status_code=503)
    body = series.chart_data(job, samples, complete)
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


@router.post("/jobs/{job_id}/cancel")
def cancel(job_id: str, web: AppDep, session: WriterDep) -> Response:
    client = web.backends.control_client
    try:
        job = web.backends.control.call(lambda: client.cancel(job_id))
        web.flashes.add(session.id, Flash("ok", f"Job {job.name} is {job.state}."))
    except ServiceError as e:
        if e.status == 404:
            raise HTTPException(404, f"no job {job_id}") from e
        web.flashes.add(session.id, Flash("error", f"Not cancelled: {e}"))
    except ServiceUnavailable as e:
        web.flashes.add(session.id, Flash("error", f"Not cancelled: {e}. Nothing changed."))
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)
