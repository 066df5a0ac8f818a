"""Readers of what agents send: status reports into the tables (acknowledged once
stored), telemetry into the history and out to live clients."""

import logging
import time
from dataclasses import dataclass, field

from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import CONTROL_CONSUMER
from atoll.platform.bus.messages import Telemetry
from atoll.platform.control.crud import sites as site_store
from atoll.platform.control.crud import telemetry as telemetry_store
from atoll.platform.service.database import Database
from atoll.platform.service.live import Hub, LiveEvent
from atoll.platform.service.sql import utcnow

log = logging.getLogger("atoll.control")
_BLOCK_MS = 500
_SCAN_S = 2.0  # how often new sites' telemetry streams are looked for
_CURSOR = "telemetry"


@dataclass
class StatusListener:
    """Reads every site's status stream (one per site: whose stream a report is on says
    whose it is) through the control plane's consumer group."""

    database: Database
    bus: Bus
    hub: Hub
    _pending: bool = True  # a restarted control plane first takes what it left unacknowledged
    _sites: list[str] = field(default_factory=list)
    _next_scan: float = 0.0

    def reconnected(self) -> None:
        self._pending = True
        self._next_scan = 0.0

    def step(self) -> None:
        if time.monotonic() >= self._next_scan:
            self._sites = self.bus.status_sites()
            self._next_scan = time.monotonic() + _SCAN_S
        if not self._sites:
            time.sleep(_BLOCK_MS / 1000)
            return
        entries = self.bus.read_status(
            self._sites, CONTROL_CONSUMER, _BLOCK_MS, pending=self._pending
        )
        if self._pending and not entries:
            self._pending = False
            return
        if not entries:
            return
        changed = []
        with self.database.writing() as session:
            for _, _, status in entries:
                if status is not None and site_store.apply_status(session, status, utcnow()):
                    changed.append(status)
            session.commit()
        for site in {site for site, _, _ in entries}:
            self.bus.ack_status(site, [entry for s, entry, _ in entries if s == site])
        for status in changed:
            self.hub.publish(
                LiveEvent(
                    "site",
                    {
                        "site": status.site,
                        "agent_state": status.state,
                        "jobs": [j.model_dump(mode="json") for j in status.jobs],
                    },
                )
            )


@dataclass
class TelemetryListener:
    """Reads every site's telemetry stream (one per site: whose stream it is on says whose a
    sample is), each from where it got to, kept in SQL per Redis epoch."""

    database: Database
    bus: Bus
    hub: Hub
    _cursors: dict[str, str] | None = None  # site -> the last entry id read
    _epoch: str | None = field(default=None)
    _next_scan: float = 0.0

    def reconnected(self) -> None:
        self._cursors = None  # Redis may be a new one: find out where to read from

    def step(self) -> None:
        if self._cursors is None:
            self._epoch = self.bus.epoch()
            self._cursors, self._next_scan = {}, 0.0
        if time.monotonic() >= self._next_scan:
            self._add_new_sites(self._cursors)
            self._next_scan = time.monotonic() + _SCAN_S
        if not self._cursors:
            time.sleep(_BLOCK_MS / 1000)  # no site has sent any yet
            return
        entries = self.bus.read_telemetry(self._cursors, _BLOCK_MS)
        if not entries:
            return
        samples = [s for _, _, s in entries if s is not None]
        last = {site: entry for site, entry, _ in entries}
        with self.database.writing() as session:
            telemetry_store.record(session, samples, utcnow())
            for site, entry in last.items():
                telemetry_store.set_cursor(session, _cursor(site), f"{self._epoch}/{entry}")
            session.commit()
        self._cursors.update(last)
        for sample in samples:
            self.hub.publish(LiveEvent("telemetry", _public(sample), sample.job_id))

    def _add_new_sites(self, cursors: dict[str, str]) -> None:
        new = [site for site in self.bus.telemetry_sites() if site not in cursors]
        if not new:
            return
        with self.database.reading() as session:
            stored = {site: telemetry_store.get_cursor(session, _cursor(site)) for site in new}
        for site, value in stored.items():
            epoch, _, entry = (value or "").partition("/")
            # A restarted Redis numbers its streams anew: read those from their start.
            cursors[site] = entry if value and epoch == self._epoch else "0-0"


def _cursor(site: str) -> str:
    return f"{_CURSOR}:{site}"


def _public(sample: Telemetry) -> dict:
    return sample.model_dump(mode="json")
