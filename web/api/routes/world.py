"""The map: a job's sites (or the federation's) by region, with their links' latency,
bandwidth and live utilisation, drawn on the server as SVG."""

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse

from atoll.platform.core.errors import AtollError
from atoll.platform.service.client import ServiceError
from atoll.web.api.deps import AppDep, SessionDep, render
from atoll.web.views import geomap

router = APIRouter()
_MAP_SITES = 200  # the federation's map shows this many sites at most


@router.get("/map", response_class=HTMLResponse)
def world_map(request: Request, web: AppDep, session: SessionDep, job: str = "") -> HTMLResponse:
    control, client = web.backends.control, web.backends.control_client
    sites = control.fetch("map-sites", lambda: client.sites(limit=_MAP_SITES, sort="region"))
    known = {s.name: s for s in sites.value.sites} if sites.value else {}
    jobs = control.fetch("map-jobs", lambda: client.jobs(limit=20))
    chosen = None
    links: list[geomap.MapLink] = []
    note = None
    if job:
        try:
            chosen = control.fetch(f"job:{job}", lambda: client.job(job))
        except ServiceError as e:
            raise HTTPException(404, f"no job {job}") from e
    if chosen is not None and chosen.value is not None:
        spec = chosen.value.spec
        topology = None
        if spec.kind == "cartel":
            note = "a cartel job has no WAN topology: its sites fetch parts from neighbours"
        else:
            try:
                topology = spec.topologies()[1]
            except AtollError as e:
                note = f"the job's topology cannot be read here: {e}"
        names = [p.site for p in chosen.value.sites]
        parts = {p.site: p for p in chosen.value.sites}
        placed = geomap.lay_out(
            [
                (n, known[n].region if n in known else None, parts[n].online, parts[n].state)
                for n in names
            ]
        )
        by_name = {s.name: s for s in placed}
        rates = web.rates.of_job(chosen.value.id)
        live = chosen.value.state == "running"
        if topology is not None:
            per_site = {n: len(names) - 1 for n in names}
            for (a, b), shape in topology.links.items():
                if a < b:
                    link = geomap.link_between(
                        by_name,
                        a,
                        b,
                        shape.latency_s,
                        shape.bandwidth_bps,
                        rates if live else None,
                        per_site,
                    )
                    if link is not None:
                        links.append(link)
    else:
        placed = geomap.lay_out([(s.name, s.region, s.online, s.state) for s in known.values()])
    return render(
        request,
        "map.html",
        session,
        sites=sites,
        placed=placed,
        links=links,
        jobs=jobs,
        chosen=chosen,
        job_id=job,
        note=note,
        width=geomap.WIDTH,
        height=geomap.HEIGHT,
        truncated=bool(sites.value and sites.value.total > _MAP_SITES),
    )
