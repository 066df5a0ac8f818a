"""Live events to browsers (same origin, cookie auth): what the control plane streams,
relayed by this process's one subscription, with ids of this process so a browser that
reconnects (`Last-Event-ID`) gets what it missed, and a heartbeat that says whether the
control plane's stream is live."""

import asyncio
import time
from collections.abc import AsyncIterable
from typing import Annotated

from fastapi import APIRouter, Header
from fastapi.sse import EventSourceResponse, ServerSentEvent

from atoll.platform.service.live import LiveEvent
from atoll.web.api.deps import AppDep, SessionDep

router = APIRouter()
RETRY_MS = 1000


@router.get("/events", response_class=EventSourceResponse)
async def events(
    web: AppDep,
    _session: SessionDep,
    job: str = "",
    last_event_id: Annotated[str | None, Header()] = None,
) -> AsyncIterable[ServerSentEvent]:
    """`telemetry` (only with `job`: that job's samples), `job`, `site`, `upstream` (the
    control plane's stream was lost or is back), `reset` (reload what the page shows),
    and `heartbeat` every few seconds."""

    def wanted(event: LiveEvent) -> bool:
        if event.kind == "telemetry":
            return bool(job) and event.job_id == job
        return event.kind != "job" or not job or event.job_id == job

    def heartbeat(seen: str) -> ServerSentEvent:
        # It carries the id of the last event this stream has passed (sent or filtered
        # out), so a reconnect resumes there even when no event was sent to this page.
        upstream = web.upstream
        data = {"live": upstream.connected, "problem": upstream.problem, "at": time.time()}
        return ServerSentEvent(event="heartbeat", data=data, id=seen, retry=RETRY_MS)

    async with web.hub.subscribe(last_event_id) as subscription:
        seen = subscription.start_id
        if last_event_id and not subscription.resumed:
            yield ServerSentEvent(event="reset", data={}, id=seen)
        yield heartbeat(seen)
        beat_at = time.monotonic() + web.settings.heartbeat_s
        for event in subscription.missed:
            if wanted(event):
                yield ServerSentEvent(event=event.kind, data=event.data, id=event.id)
        while True:
            # A heartbeat every heartbeat_s, also while events stream: the page counts the
            # stream stale when they stop, whatever else arrives.
            if (wait_s := beat_at - time.monotonic()) <= 0:
                yield heartbeat(seen)
                beat_at = time.monotonic() + web.settings.heartbeat_s
                continue
            try:
                event = await asyncio.wait_for(subscription.queue.get(), wait_s)
            except TimeoutError:
                continue
            seen = event.id
            if wanted(event):
                yield ServerSentEvent(event=event.kind, data=event.data, id=event.id)
