"""Readers of what agents send: status reports into the tables (acknowledged once
stored), telemetry into the history and out to live clients."""

import logging
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
_CURSOR = "telemetry"


@dataclass
class StatusListener:
    database: Database
    bus: Bus
    hub: Hub
    _pending: bool = True  # a restarted control plane first takes what it left unacknowledged

    def reconnected(self) -> None:
        self._pending = True

    def step(self) -> None:
        entries = self.bus.read_status(CONTROL_CONSUMER, _BLOCK_MS, pending=self._pending)
        if self._pending and not entries:
            self._pending = False
            return
        if not entries:
            return
        changed = []
        with self.database.writing() as session:
            for _, status in entries:
                if status is not None and site_store.apply_status(session, status, utcnow()):
                    changed.append(status)
            session.commit()
        self.bus.ack_status([entry_id for entry_id, _ in entries])
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
    database: Database
    bus: Bus
    hub: Hub
    _cursor: str | None = None
    _epoch: str | None = field(default=None)

    def reconnected(self) -> None:
        self._cursor = None  # Redis may be a new one: find out where to read from

    def step(self) -> None:
        if self._cursor is None:
            self._epoch = self.bus.epoch()
            with self.database.reading() as session:
                stored = telemetry_store.get_cursor(session, _CURSOR)
            epoch, _, entry = (stored or "").partition("/")
            # A restarted Redis numbers its stream anew: read that one from its start.
            self._cursor = entry if stored and epoch == self._epoch else "0-0"
        entries = self.bus.read_telemetry(self._cursor, _BLOCK_MS)
        if not entries:
            return
        samples = [s for _, s in entries if s is not None]
        last = entries[-1][0]
        with self.database.writing() as session:
            telemetry_store.record(session, samples, utcnow())
            telemetry_store.set_cursor(session, _CURSOR, f"{self._epoch}/{last}")
            session.commit()
        self._cursor = last
        for sample in samples:
            self.hub.publish(LiveEvent("telemetry", _public(sample), sample.job_id))


def _public(sample: Telemetry) -> dict:
    return sample.model_dump(mode="json")
