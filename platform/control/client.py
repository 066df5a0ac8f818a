"""A typed client for the control plane's API: what the CLI, `atoll demo` and the tests use.

Reads are retried when the control plane is away (it may be restarting); a submit is
resent only when it cannot have arrived, so a job is never submitted twice.
"""

import json
from collections.abc import Iterator
from typing import Any

from atoll.platform.control.core.config import DEFAULT_PORT
from atoll.platform.control.schemas import (
    CommandList,
    JobOut,
    JobPage,
    Readiness,
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

    def submit(self, spec: dict[str, Any], name: str | None = None, tls: bool = True) -> JobOut:
        body = {"spec": spec, "tls": tls, **({"name": name} if name else {})}
        return self._call(JobOut, "POST", "/v1/jobs", json=body, idempotent=False)

    def jobs(self, state: str | None = None, limit: int = 50) -> JobPage:
        params = {"limit": limit, **({"state": state} if state else {})}
        return self._call(JobPage, "GET", "/v1/jobs", params=params)

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

    def sites(self) -> SiteList:
        return self._call(SiteList, "GET", "/v1/sites")

    def site(self, name: str) -> SiteOut:
        return self._call(SiteOut, "GET", f"/v1/sites/{name}")

    def drain(self, name: str) -> SiteOut:
        return self._call(SiteOut, "POST", f"/v1/sites/{name}/drain")

    def activate(self, name: str) -> SiteOut:
        return self._call(SiteOut, "POST", f"/v1/sites/{name}/activate")

    def remove(self, name: str) -> SiteOut:
        return self._call(SiteOut, "DELETE", f"/v1/sites/{name}")

    # service

    def readiness(self) -> Readiness:
        response = self._send("GET", "/readyz", True, READINESS_RETRY_STATUSES)
        return Readiness.model_validate_json(response.content)

    def events(self, job_id: str | None = None) -> Iterator[tuple[str, Any]]:
        """(event name, data) as the server sends them, until the connection ends."""
        params = {"job_id": job_id} if job_id else {}
        with self._http.stream("GET", "/v1/events", params=params, timeout=None) as response:
            name, data = "message", []
            for line in response.iter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    yield name, json.loads("\n".join(data))
                    name, data = "message", []
