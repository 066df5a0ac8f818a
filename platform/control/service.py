"""The control plane's background work: the dispatcher and the two listeners, each in a
thread with a Redis connection of its own, each carrying on with backoff while Redis
is away. The HTTP API runs beside them and reads what they keep in SQL."""

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from atoll.platform.bus.connection import Bus, BusDown, keep_trying
from atoll.platform.bus.keys import BusKeys
from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.dispatcher import Dispatcher
from atoll.platform.control.enrolment import Enrolment
from atoll.platform.control.listeners import StatusListener, TelemetryListener
from atoll.platform.service.database import Database
from atoll.platform.service.live import Hub

log = logging.getLogger("atoll.control")


class ControlService:
    def __init__(self, settings: ControlSettings, database: Database, hub: Hub) -> None:
        self.settings = settings
        self.database = database
        self.hub = hub
        url, keys = settings.redis_url.get_secret_value(), BusKeys(settings.redis_prefix)
        self.buses = [Bus(url, keys) for _ in range(5)]
        self.enrolment = Enrolment(settings, database, self.buses[4])
        self.dispatcher = Dispatcher(
            database,
            self.buses[0],
            settings,
            hub,
            on_new_epoch=self.enrolment.restore,
            sign=self.enrolment.sign,
        )
        self.status = StatusListener(database, self.buses[1], hub)
        self.telemetry = TelemetryListener(database, self.buses[2], hub)
        self._probe = self.buses[3]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.last_tick = 0.0

    def start(self) -> None:
        loops: list[tuple[str, Callable[[], None], Callable[[], None]]] = [
            ("dispatcher", self._tick, lambda: None),
            ("status", self.status.step, self.status.reconnected),
            ("telemetry", self.telemetry.step, self.telemetry.reconnected),
        ]
        for name, step, reconnected in loops:
            thread = threading.Thread(
                target=keep_trying,
                args=(self._guarded(name, step), self._stop, f"control {name}", reconnected),
                name=f"atoll-control-{name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def _guarded(self, name: str, step: Callable[[], None]) -> Callable[[], None]:
        """The loop goes on whatever one round of it ran into (the database away, a bug):
        logged, and tried again a moment later."""

        def guarded() -> None:
            try:
                step()
            except BusDown:
                raise  # keep_trying's: backoff until Redis is back
            except SQLAlchemyError as e:
                log.warning("control %s: database: %s", name, str(e).splitlines()[0])
                self._stop.wait(1.0)
            except Exception:
                log.exception("control %s: unexpected error", name)
                self._stop.wait(1.0)

        return guarded

    def _tick(self) -> None:
        self.dispatcher.tick()
        self.last_tick = time.monotonic()
        self._stop.wait(self.settings.tick_s)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self.dispatcher.close()
        for bus in self.buses:
            bus.close()

    def redis_problem(self) -> str | None:
        """Why Redis is not usable right now, or None."""
        try:
            self._probe.epoch()
        except BusDown as e:
            return str(e)
        return None
