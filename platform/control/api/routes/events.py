"""Live events as server-sent events: telemetry as it arrives, job and site changes."""

from collections.abc import AsyncIterable
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from atoll.platform.control.api.deps import HubDep
from atoll.platform.control.api.routes import V1

router = APIRouter(prefix=V1, tags=["events"])


@router.get(
    "/events",
    response_class=EventSourceResponse,
    summary="Live telemetry, job and site events (text/event-stream)",
)
async def events(
    hub: HubDep,
    job_id: Annotated[
        str | None, Query(description="Only this job's events (and every site event).")
    ] = None,
) -> AsyncIterable[ServerSentEvent]:
    """Events named `telemetry` (a sample, as in the telemetry history), `job` (`id`,
    `state`, `message`) and `site` (liveness, or the agent's latest report). What was
    missed while disconnected is in `GET /v1/jobs/{job_id}/telemetry`."""
    async with hub.subscribe() as queue:
        while True:
            event = await queue.get()
            if job_id is not None and event.job_id not in (None, job_id):
                continue
            yield ServerSentEvent(event=event.kind, data=event.data)
