"""Messages a write leaves for the page it redirects to (POST, then redirect, then GET),
kept in memory by session and shown once. A secret shown once (a new site's token) goes
this way: never in a URL, and gone once the page has shown it."""

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

_SESSIONS = 1000
_TTL_S = 300.0


@dataclass(frozen=True)
class Flash:
    kind: Literal["ok", "error", "secret"]
    text: str
    secret: str | None = None  # shown once, in a field to copy
    hint: str | None = None  # how to use the secret


class Flashes:
    def __init__(self) -> None:
        self._by_session: OrderedDict[str, list[tuple[float, Flash]]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, session_id: str, flash: Flash) -> None:
        with self._lock:
            self._by_session.setdefault(session_id, []).append((time.time(), flash))
            self._by_session.move_to_end(session_id)
            while len(self._by_session) > _SESSIONS:
                self._by_session.popitem(last=False)

    def take(self, session_id: str) -> list[Flash]:
        """The session's messages, removed: a reload does not show them again."""
        with self._lock:
            kept = self._by_session.pop(session_id, [])
        now = time.time()
        return [f for at, f in kept if now - at < _TTL_S]
