"""A typed client for the control plane's API: what the CLI, `atoll demo` and the tests use.

Reads are retried when the control plane is away (it may be restarting); a submit is
resent only when it cannot have arrived, so a job is never submitted twice.
"""

import json
import os
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

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
from atoll.platform.core.errors import AtollError

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
Model = TypeVar("Model", bound=BaseModel)
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
_MAYBE_SENT = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.ReadError, httpx.RemoteProtocolError)


class ControlError(AtollError):
    """The control plane refused a request."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"control plane answered {status}: {message}")
        self.status = status


class ControlUnavailable(AtollError):
    """No answer from the control plane, after every retry."""


class ControlClient:
    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        timeout_s: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.3,
    ) -> None:
        self.url = url.rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    @classmethod
    def from_env(cls, url: str | None = None, token: str | None = None) -> "ControlClient":
        """URL from ATOLL_CONTROL_URL; token from the first of ATOLL_ADMIN_TOKEN."""
        url = url or os.environ.get("ATOLL_CONTROL_URL") or DEFAULT_URL
        if token is None:
            token = os.environ.get("ATOLL_ADMIN_TOKEN", "").split(",")[0].strip() or None
        return cls(url, token)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "ControlClient":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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
        response = self._send("GET", "/readyz", idempotent=True)
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

    # plumbing

    def _call(
        self, model: type[Model], method: str, path: str, idempotent: bool = True, **kwargs: Any
    ) -> Model:
        response = self._send(method, path, idempotent, **kwargs)
        if response.is_error:
            try:
                message = response.json()["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200] or response.reason_phrase
            raise ControlError(response.status_code, message)
        return model.model_validate_json(response.content)

    def _send(self, method: str, path: str, idempotent: bool, **kwargs: Any) -> httpx.Response:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(method, path, **kwargs)
            except _NOT_SENT as e:
                if last:
                    raise ControlUnavailable(
                        f"cannot reach the control plane at {self.url}: {e}"
                    ) from e
            except _MAYBE_SENT as e:
                if last or not idempotent:
                    raise ControlUnavailable(
                        f"no answer from the control plane at {self.url}"
                    ) from e
            else:
                if response.status_code != 503 or last or not idempotent:
                    return response
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")
