"""A typed client for the control plane's API: what the CLI, `atoll demo` and the tests use.

Reads are retried when the control plane is away (it may be restarting); a submit is
resent only when it cannot have arrived, so a job is never submitted twice.
"""

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from atoll.platform.control.core.config import DEFAULT_PORT
from atoll.platform.control.schemas import (
    CommandList,
    EnrolOut,
    EnrolTokenOut,
    JobOut,
    JobPage,
    Readiness,
    RevokeOut,
    SamplePage,
    SiteList,
    SiteOut,
)
from atoll.platform.service.client import (
    READINESS_RETRY_STATUSES,
    ServiceClient,
    ServiceError,
    ServiceUnavailable,
)

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


class ControlError(ServiceError):
    """The control plane refused a request."""

    service = "the control plane"


class ControlUnavailable(ServiceUnavailable):
    """No answer from the control plane, after every retry."""


class ControlClient(ServiceClient):
    refused = ControlError
    unavailable = ControlUnavailable
    default_url = DEFAULT_URL
    url_variable = "ATOLL_CONTROL_URL"

    # jobs

    def submit(self, spec: dict[str, Any], name: str | None = None) -> JobOut:
        body = {"spec": spec, **({"name": name} if name else {})}
        return self._call(JobOut, "POST", "/v1/jobs", json=body, idempotent=False)

    def jobs(
        self, state: str | None = None, limit: int = 50, offset: int = 0, sort: str | None = None
    ) -> JobPage:
        params = {"limit": limit, "offset": offset, "state": state, "sort": sort}
        return self._call(JobPage, "GET", "/v1/jobs", params=_given(params))

    def job(self, job_id: str) -> JobOut:
        return self._call(JobOut, "GET", f"/v1/jobs/{job_id}")

    def cancel(self, job_id: str) -> JobOut:
        return self._call(JobOut, "POST", f"/v1/jobs/{job_id}/cancel")

    def telemetry(
        self, job_id: str, after: int = 0, limit: int = 1000, **filters: str
    ) -> SamplePage:
        params = {"after": after, "limit": limit, **filters}
        return self._call(SamplePage, "GET", f"/v1/jobs/{job_id}/telemetry", params=params)

    def commands(self, site: str | None = None, job_id: str | None = None) -> CommandList:
        params = {k: v for k, v in {"site": site, "job_id": job_id}.items() if v}
        return self._call(CommandList, "GET", "/v1/commands", params=params)

    # sites

    def sites(
        self,
        limit: int = 1000,
        offset: int = 0,
        sort: str | None = None,
        **filters: str | bool | None,
    ) -> SiteList:
        """Filters: state, region, online, name (a part of it)."""
        params = _given({"limit": limit, "offset": offset, "sort": sort, **filters})
        return self._call(SiteList, "GET", "/v1/sites", params=params)

    def declare_site(self, name: str, region: str | None = None) -> SiteOut:
        body = _given({"name": name, "region": region})
        return self._call(SiteOut, "POST", "/v1/sites", json=body)

    def site(self, name: str) -> SiteOut:
        return self._call(SiteOut, "GET", f"/v1/sites/{name}")

    def drain(self, name: str) -> SiteOut:
        return self._call(SiteOut, "POST", f"/v1/sites/{name}/drain")

    def activate(self, name: str) -> SiteOut:
        return self._call(SiteOut, "POST", f"/v1/sites/{name}/activate")

    def remove(self, name: str) -> SiteOut:
        return self._call(SiteOut, "DELETE", f"/v1/sites/{name}")

    # trust

    def enrol_token(self, site: str) -> EnrolTokenOut:
        """A new one-time enrolment token for `site` (an earlier unused one stops working)."""
        return self._call(EnrolTokenOut, "POST", f"/v1/sites/{site}/token", idempotent=False)

    def enrol(self, token: str, csr: str, hosts: list[str] | None = None) -> EnrolOut:
        body = {"token": token, "csr": csr, "hosts": hosts or []}
        return self._call(EnrolOut, "POST", "/v1/enrol", json=body, idempotent=False)

    def revoke(self, site: str) -> RevokeOut:
        return self._call(RevokeOut, "POST", f"/v1/sites/{site}/revoke")

    # service

    def readiness(self) -> Readiness:
        response = self._send("GET", "/readyz", True, READINESS_RETRY_STATUSES)
        return Readiness.model_validate_json(response.content)

    def events(self, job_id: str | None = None) -> Iterator[tuple[str, Any]]:
        """(event name, data) as the server sends them, until the connection ends."""
        for event in self.event_stream(job_id, timeout_s=None):
            if event.name != "heartbeat":
                yield event.name, event.data

    def event_stream(
        self,
        job_id: str | None = None,
        last_event_id: str | None = None,
        timeout_s: float | None = 30.0,
    ) -> Iterator["StreamEvent"]:
        """Every event with its id, and a `heartbeat` for each heartbeat comment, until the
        connection ends. `last_event_id` resumes after that event; `timeout_s` is how long
        a silent stream (no event, no heartbeat) is waited on before it counts as lost."""
        params = {"job_id": job_id} if job_id else {}
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        timeout = httpx.Timeout(5.0, read=timeout_s)
        with self._http.stream(
            "GET", "/v1/events", params=params, headers=headers, timeout=timeout
        ) as response:
            if response.is_error:
                response.read()
                raise self._error_from(response)
            yield from parse_events(response.iter_lines())


@dataclass(frozen=True)
class StreamEvent:
    name: str  # telemetry, job, site, reset; heartbeat for a heartbeat comment
    data: Any
    id: str | None


def parse_events(lines: Iterable[str]) -> Iterator[StreamEvent]:
    """Server-sent events from the lines of a text/event-stream."""
    name, event_id = "message", None
    data: list[str] = []
    for line in lines:
        if line.startswith(":"):
            if not data:
                yield StreamEvent("heartbeat", None, None)
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif not line and data:
            yield StreamEvent(name, json.loads("\n".join(data)), event_id)
            name, data, event_id = "message", [], None


def _given(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}
