"""One subscription to the control plane's event stream, fanned out to every browser.

A thread reads `/v1/events`, resuming after the last id it saw when it reconnects, and
republishes each event on the dashboard's own hub, which gives browsers ids of its own
(they reconnect to this process, not to the control plane). While the control plane's
stream is down the browsers are told (`upstream` events), and the thread retries with
backoff; a stream that cannot be resumed makes pages reload what they show (`reset`)."""

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from atoll.platform.control.client import ControlClient, StreamEvent
from atoll.platform.net.backoff import Backoff
from atoll.platform.service.client import ServiceError, ServiceUnavailable
from atoll.platform.service.live import Hub, LiveEvent

log = logging.getLogger("atoll.web")


def job_of(event: StreamEvent) -> str | None:
    """Which job an event is about, for browsers that follow one job."""
    data: Any = event.data
    if not isinstance(data, dict):
        return None
    if event.name == "telemetry":
        return data.get("job_id")
    if event.name == "job":
        return data.get("id")
    return None


class Upstream:
    def __init__(
        self,
        url: str,
        token: str,
        hub: Hub,
        on_wan_bytes: Callable[[str, str, float, int], None] | None = None,
        silence_s: float = 30.0,
    ) -> None:
        self.url, self.token = url, token
        self.hub = hub
        self.on_wan_bytes = on_wan_bytes  # (job, site, time, cumulative bytes) of a sample
        self.silence_s = silence_s  # no event and no heartbeat for this long: reconnect
        self.connected = False
        self.problem: str | None = "not connected yet"
        self.last_id: str | None = None
        self.events = 0
        self._client: ControlClient | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="atoll-web-upstream", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        client = self._client
        if client is not None:
            client.close()  # breaks a blocked read
        self._thread.join(timeout=5)

    def _run(self) -> None:
        backoff = Backoff(0.25, 5.0)
        while not self._stop.is_set():
            self._client = ControlClient(self.url, self.token, timeout_s=5.0, retries=0)
            try:
                for event in self._client.event_stream(
                    last_event_id=self.last_id, timeout_s=self.silence_s
                ):
                    if not self.connected:
                        self._set(True, None)
                        backoff.reset()
                    self._take(event)
                    if self._stop.is_set():
                        return
                problem = "the control plane closed its event stream"
            except (httpx.HTTPError, ServiceUnavailable, ServiceError, ValueError) as e:
                problem = f"the control plane's event stream: {type(e).__name__}: {e}"
            finally:
                self._client.close()
            if self._stop.is_set():
                return
            self._set(False, problem)
            self._stop.wait(backoff.next_delay())

    def _take(self, event: StreamEvent) -> None:
        if event.name == "heartbeat":
            return
        if event.id:
            self.last_id = event.id
        self.events += 1
        data = event.data if isinstance(event.data, dict) else {"value": event.data}
        data = {**data, "received_at": time.time()}
        wan_bytes = data.get("wan_bytes") if event.name == "telemetry" else None
        if wan_bytes is not None and self.on_wan_bytes is not None:
            self.on_wan_bytes(data["job_id"], data["site"], data["time"], data["wan_bytes"])
        self.hub.publish(LiveEvent(event.name, data, job_of(event)))

    def _set(self, connected: bool, problem: str | None) -> None:
        if connected != self.connected:
            if connected:
                log.info("following the control plane's events")
            else:
                log.warning("lost the control plane's events: %s", problem)
            self.hub.publish(
                LiveEvent("upstream", {"live": connected, "problem": problem, "at": time.time()})
            )
        self.connected, self.problem = connected, problem
