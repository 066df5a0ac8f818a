"""Recently verified site tokens, so that most requests skip the database lookup (and the
trip to a worker thread that a lookup needs).

An entry lives `ttl_s` seconds. The server process that revokes a token forgets its
site's entries at once; other server processes (`--workers`, or more replicas) honour a
revocation within `ttl_s`. Only token hashes are kept, as in the database.
"""

import threading
import time
from collections.abc import Callable


class TokenCache:
    def __init__(
        self,
        ttl_s: float,
        max_entries: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()  # routes in worker threads forget; the event loop reads
        self._entries: dict[str, tuple[str, str, float]] = {}

    def get(self, token_hash: str) -> tuple[str, str] | None:
        """(site id, token id) if the token was verified less than `ttl_s` ago."""
        entry = self._entries.get(token_hash)
        if entry is None:
            return None
        site_id, token_id, expires = entry
        if self._clock() >= expires:
            with self._lock:
                self._entries.pop(token_hash, None)
            return None
        return site_id, token_id

    def put(self, token_hash: str, site_id: str, token_id: str) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            if len(self._entries) >= self.max_entries:
                # Dicts keep insertion order: drop the oldest tenth in one go.
                for key in list(self._entries)[: max(1, self.max_entries // 10)]:
                    del self._entries[key]
            self._entries[token_hash] = (site_id, token_id, self._clock() + self.ttl_s)

    def forget_site(self, site_id: str) -> None:
        """After revoking any of a site's tokens: its next request is checked afresh."""
        with self._lock:
            for key in [k for k, (s, _, _) in self._entries.items() if s == site_id]:
                del self._entries[key]
