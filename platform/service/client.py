"""What every typed client of an Atoll service shares: one connection pool with the
bearer token, and retries that are safe by construction. A request that never reached
the server is retried whatever it was; one that may have reached it only when repeating
it cannot do anything twice (the caller says so with `idempotent`)."""

import os
import random
import ssl
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Self, TypeVar

import httpx
from pydantic import BaseModel

from atoll.platform.core.errors import AtollError
from atoll.platform.service.schemas import Problem

Model = TypeVar("Model", bound=BaseModel)
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# /readyz answers 503 when not ready: an answer to return, not a reason to retry.
READINESS_RETRY_STATUSES = frozenset({429, 502, 504})
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)  # the server cannot have acted on these
_MAYBE_SENT = (httpx.ReadTimeout, httpx.WriteTimeout, httpx.ReadError, httpx.RemoteProtocolError)
_MAX_PAUSE_S = 30.0


def admin_token_from_env() -> str | None:
    """The first of the comma-separated ATOLL_ADMIN_TOKEN: the one a client presents."""
    return os.environ.get("ATOLL_ADMIN_TOKEN", "").split(",")[0].strip() or None


def tls_verification(ca_file: str | None = None) -> ssl.SSLContext | bool:
    """How an https:// service's certificate is checked: against `ca_file` (default the
    ATOLL_CA_FILE variable: the federation's CA, for services it issued certificates
    to), else against the system's trusted CAs."""
    ca_file = ca_file or os.environ.get("ATOLL_CA_FILE") or None
    if ca_file is None:
        return True
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as e:
        raise AtollError(f"cannot read the CA file {ca_file} (ATOLL_CA_FILE): {e}") from e


class ServiceError(AtollError):
    """The service refused a request; `problems` names each field and what is wrong."""

    service: ClassVar[str] = "the service"  # for messages: "the registry"

    def __init__(
        self, status: int, error: str, message: str, problems: Sequence[Problem] = ()
    ) -> None:
        super().__init__(f"{self.service} answered {status} ({error}): {message}")
        self.status = status
        self.error = error
        self.problems = list(problems)


class ServiceUnavailable(AtollError):
    """No answer from the service, after every retry."""


class ServiceClient:
    refused: ClassVar[type[ServiceError]]  # its `service` names the service in messages
    unavailable: ClassVar[type[ServiceUnavailable]]
    default_url: ClassVar[str]
    url_variable: ClassVar[str]  # the environment variable with the service's URL

    @classmethod
    def from_env(cls, url: str | None = None, token: str | None = None) -> Self:
        """URL from `url_variable`, token from `token_from_env`, unless given."""
        url = url or os.environ.get(cls.url_variable) or cls.default_url
        return cls(url, token if token is not None else cls.token_from_env())

    @classmethod
    def token_from_env(cls) -> str | None:
        """The first admin token in ATOLL_ADMIN_TOKEN."""
        return admin_token_from_env()

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        timeout_s: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        ca_file: str | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.url = (url or self.default_url).rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0)),
            transport=transport,
            verify=tls_verification(ca_file),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self, model: type[Model], method: str, path: str, idempotent: bool = True, **kwargs: Any
    ) -> Model:
        response = self._send(method, path, idempotent, RETRY_STATUSES, **kwargs)
        if response.is_error:
            raise self._error_from(response)
        return model.model_validate_json(response.content)

    def _send(
        self,
        method: str,
        path: str,
        idempotent: bool,
        retry_statuses: frozenset[int] = RETRY_STATUSES,
        **kwargs: Any,
    ) -> httpx.Response:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(method, path, **kwargs)
            except _NOT_SENT as e:
                if last:
                    raise self.unavailable(
                        f"cannot reach {self.refused.service} at {self.url}: {e}"
                    ) from e
                self._pause(attempt)
                continue
            except _MAYBE_SENT as e:
                if last or not idempotent:
                    raise self.unavailable(
                        f"no answer from {self.refused.service} at {self.url}: {e!r}"
                    ) from e
                self._pause(attempt)
                continue
            if response.status_code in retry_statuses and idempotent and not last:
                self._pause(attempt, response.headers.get("retry-after"))
                continue
            return response
        raise AssertionError("unreachable")

    def _pause(self, attempt: int, retry_after: str | None = None) -> None:
        delay = self.backoff_s * 2**attempt * (0.5 + random.random())  # jitter spreads retries
        if retry_after and retry_after.isdigit():
            delay = max(delay, float(retry_after))
        time.sleep(min(delay, _MAX_PAUSE_S))

    def _error_from(self, response: httpx.Response) -> ServiceError:
        try:
            body = response.json()
            return self.refused(
                response.status_code,
                body["error"],
                body["message"],
                [Problem.model_validate(p) for p in body.get("problems", [])],
            )
        except (ValueError, KeyError, TypeError):
            text = response.text.strip()[:200] or response.reason_phrase
            return self.refused(response.status_code, "error", text)
