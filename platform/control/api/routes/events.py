"""Live events as server-sent events: telemetry as it arrives, job and site changes."""

import asyncio
from collections.abc import AsyncIterable
from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from atoll.platform.control.api.deps import HubDep, SettingsDep
from atoll.platform.control.api.routes import V1
from atoll.platform.service.live import LiveEvent

router = APIRouter(prefix=V1, tags=["events"])


@router.get(
    "/events",
    response_class=EventSourceResponse,
    summary="Live telemetry, job and site events (text/event-stream)",
)
async def events(
    hub: HubDep,
    settings: SettingsDep,
    job_id: Annotated[
        str | None, Query(description="Only this job's events (and every site event).")
    ] = None,
    last_event_id: Annotated[
        str | None,
        Header(
            description="The id of the last event seen: resume after it (what a browser's "
            "EventSource sends when it reconnects)."
        ),
    ] = None,
) -> AsyncIterable[ServerSentEvent]:
    """Events named `telemetry` (a sample, as in the telemetry history), `job` (`id`,
    `state`, `message`) and `site` (liveness, or the agent's latest report), each with an
    `id`. Reconnecting with `Last-Event-ID` replays what was missed, if it is still kept;
    if not (or the control plane restarted), the first event is `reset`: read the history
    (`GET /v1/jobs/{job_id}/telemetry`) again. A `heartbeat` comment comes every
    `ATOLL_EVENTS_HEARTBEAT_S` seconds when nothing else does."""

    def wanted(event: LiveEvent) -> bool:
        return job_id is None or event.job_id in (None, job_id)

    def sse(event: LiveEvent) -> ServerSentEvent:
        return ServerSentEvent(event=event.kind, data=event.data, id=event.id)

    async with hub.subscribe(last_event_id) as subscription:
        if not subscription.resumed:
            yield ServerSentEvent(event="reset", data={"last": hub.last_id}, id=hub.last_id)
        for event in subscription.missed:
            if wanted(event):
                yield sse(event)
        while True:
            try:
                event = await asyncio.wait_for(
                    subscription.queue.get(), settings.events_heartbeat_s
                )
            except TimeoutError:
                yield ServerSentEvent(comment="heartbeat")
                continue
            if wanted(event):
                yield sse(event)
