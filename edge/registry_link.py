"""The agent's side of the registry, in a thread of its own: registration (or reuse of
its token), heartbeats, and the reports of class priors and accuracy.

The registry may be down when the agent starts or go down later: training does not
wait for it. Reports queue up (each with an id of its own, so a resend is stored
once) and go out, oldest first, when it is back.
"""

import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from uuid import UUID, uuid4

from atoll.edge.config import EdgeSettings
from atoll.edge.state import StateDir
from atoll.edge.steps import ReportToRegistry
from atoll.platform.net.backoff import Backoff
from atoll.registry.client import RegistryClient, RegistryError, RegistryUnavailable

log = logging.getLogger("atoll.edge")
_QUEUE = 200  # reports kept while the registry is away; the oldest go first


@dataclass(frozen=True)
class PendingReport:
    id: UUID  # one id a report, kept across resends: the registry stores it once
    report: ReportToRegistry


class RegistryLink:
    def __init__(self, settings: EdgeSettings, state: StateDir, registry_id: str | None) -> None:
        self.settings = settings
        self.state = state
        self.site_id = registry_id
        # The token it saved last (a rotation it made itself) before the one it was given.
        self.token = state.registry_token() or settings.registry_token_value
        self.problem: str | None = None  # why it is not registered, when it is not
        self.reports_sent = 0
        self._reports: deque[PendingReport] = deque(maxlen=_QUEUE)
        self._lock = threading.Lock()
        self._backoff = Backoff(0.5, 30.0)

    @property
    def registered(self) -> bool:
        return self.site_id is not None and self.token is not None

    def _site_id(self) -> str:
        if self.site_id is None:
            raise RuntimeError("the site is not registered yet")  # callers register first
        return self.site_id

    def report(self, report: ReportToRegistry) -> None:
        with self._lock:
            self._reports.append(PendingReport(uuid4(), report))

    def run(self, stop: threading.Event) -> None:
        next_beat = 0.0
        while not stop.is_set():
            try:
                if not self.registered:
                    self._register()
                if time.monotonic() >= next_beat:
                    self._client().heartbeat(self._site_id())
                    next_beat = time.monotonic() + self.settings.registry_heartbeat_s
                self._send_reports()
                self._backoff.reset()
                self.problem = None
                stop.wait(0.5)
            except RegistryUnavailable as e:
                self.problem = str(e)
                stop.wait(self._backoff.next_delay())
            except RegistryError as e:
                self.problem = str(e)
                if e.status == 401:
                    log.warning("the registry refused this site's token; registering anew")
                    self.token = None
                else:
                    log.warning("registry: %s", e)
                stop.wait(self._backoff.next_delay())

    def _client(self, token: str | None = None) -> RegistryClient:
        assert self.settings.registry_url is not None
        return RegistryClient(
            self.settings.registry_url, token or self.token, timeout_s=10, retries=0
        )

    def _register(self) -> None:
        """Reuse the token it has; else register with the admin token (or, when the name is
        already registered and this agent lost its token, issue a new one for it)."""
        s = self.settings
        if self.token is not None:
            with self._client() as client:
                if self.site_id is None:
                    found = client.find_site(s.name)
                    if found is None:
                        raise RegistryError(404, "not_found", f"no registered site {s.name}")
                    self.site_id = str(found.id)
                if client.get_site(self.site_id).endpoint != s.geo_endpoint:
                    client.update_site(self.site_id, endpoint=s.geo_endpoint)
            return
        admin = s.admin_token_value
        if admin is None:
            raise RegistryError(
                401, "no_token", "no registry token and no admin token to register with"
            )
        with self._client(admin) as client:
            existing = client.find_site(s.name)
            if existing is None:
                capabilities = {"workers": s.workers, "cpus": os.cpu_count()}
                created = client.register_site(
                    s.name, s.region, s.geo_endpoint, s.labels, capabilities
                )
                self.site_id, self.token = str(created.id), created.token
            else:
                self.site_id = str(existing.id)
                self.token = client.create_token(self.site_id).token
        self.state.save_registry_token(self.token)
        log.info("registered with the registry as %s (%s)", s.name, self.site_id)

    def _send_reports(self) -> None:
        while True:
            with self._lock:
                if not self._reports:
                    return
                pending = self._reports[0]
            report = pending.report
            try:
                with self._client() as client:
                    client.report(
                        self._site_id(),
                        report.class_priors,
                        report.accuracy,
                        report.samples,
                        report.model_signature,
                        report.model_version,
                        report_id=pending.id,
                    )
            except RegistryError as e:
                if e.status in (401, 403, 429) or e.status >= 500:
                    raise
                log.warning("the registry refused a report, dropped: %s", e)  # never will take it
            with self._lock:
                if self._reports and self._reports[0] is pending:
                    self._reports.popleft()
            self.reports_sent += 1
