"""The services behind the dashboard, as its pages meet them: each call bounded by a short
timeout, its last good answer kept, and a service that just failed not called again for
a moment. A page on a dead service answers at once with the last known data, marked
stale, and a banner: it never hangs and never shows stale data as fresh."""

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from atoll.platform.control.client import ControlClient
from atoll.platform.service.client import ServiceError, ServiceUnavailable
from atoll.registry.client import RegistryClient
from atoll.web.core.config import WebSettings

log = logging.getLogger("atoll.web")
T = TypeVar("T")
_KEPT = 512  # last good answers kept, per service
_PAUSE_S = 3.0  # after a failure, calls fail fast for this long


@dataclass(frozen=True)
class Fetched(Generic[T]):
    """What a page got: the value (None if there never was one), whether it is the last
    known one rather than an answer now, and as of when."""

    value: T | None
    stale: bool
    as_of: float | None
    problem: str | None = None


@dataclass
class Health:
    up: bool = True
    problem: str | None = None
    since: float = 0.0  # when it went down
    last_ok: float | None = None


class Backend:
    """One service, with the last good answer to each question asked of it."""

    def __init__(self, name: str, pause_s: float = _PAUSE_S) -> None:
        self.name = name
        self.health = Health()
        self.pause_s = pause_s
        self._kept: OrderedDict[str, tuple[object, float]] = OrderedDict()
        self._lock = threading.Lock()

    def fetch(self, key: str, call: Callable[[], T]) -> Fetched[T]:
        """The answer to `call`, or the last known one (stale) when the service is away.
        A refusal (4xx) is no outage: it is raised for the page to show."""
        if not self.health.up and time.time() - self.health.since < self.pause_s:
            return self._kept_answer(key)
        try:
            value = call()
        except ServiceUnavailable as e:
            self._down(str(e))
            return self._kept_answer(key)
        except ServiceError as e:
            if e.status < 500:
                raise
            self._down(f"{self.name} answered {e.status}: {e}")
            return self._kept_answer(key)
        now = time.time()
        with self._lock:
            self._kept[key] = (value, now)
            self._kept.move_to_end(key)
            while len(self._kept) > _KEPT:
                self._kept.popitem(last=False)
        self._up(now)
        return Fetched(value, False, now)

    def call(self, action: Callable[[], T]) -> T:
        """A write: no kept answer stands in for it. Raises ServiceUnavailable when the
        service is away, ServiceError when it refuses."""
        try:
            value = action()
        except ServiceUnavailable as e:
            self._down(str(e))
            raise
        self._up(time.time())
        return value

    def _kept_answer(self, key: str) -> Fetched[T]:
        with self._lock:
            kept = self._kept.get(key)
        problem = self.health.problem or f"{self.name} is unreachable"
        if kept is None:
            return Fetched(None, True, None, problem)
        value, at = kept
        return Fetched(value, True, at, problem)  # type: ignore[arg-type]

    def _down(self, problem: str) -> None:
        with self._lock:
            if self.health.up:
                log.warning("%s is unreachable: %s", self.name, problem)
                self.health = Health(False, problem, time.time(), self.health.last_ok)
            else:
                self.health.problem, self.health.since = problem, time.time()

    def _up(self, now: float) -> None:
        with self._lock:
            if not self.health.up:
                log.info("%s is back", self.name)
            self.health = Health(True, None, 0.0, now)


class Backends:
    """The control plane and the registry, each behind a typed client that presents the
    dashboard's own token; the browser never sees it."""

    def __init__(self, settings: WebSettings) -> None:
        timeout = settings.service_timeout_s
        token = settings.service_token
        # No retries: a page would rather show the last known data at once than wait.
        self.control_client = ControlClient(settings.control_url, token, timeout, retries=0)
        self.registry_client = RegistryClient(settings.registry_url, token, timeout, retries=0)
        self.control = Backend("the control plane")
        self.registry = Backend("the registry")

    def problems(self) -> list[tuple[str, Health]]:
        return [(b.name, b.health) for b in (self.control, self.registry) if not b.health.up]

    def close(self) -> None:
        self.control_client.close()
        self.registry_client.close()
