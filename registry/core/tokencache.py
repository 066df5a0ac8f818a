"""Verified site tokens, so that most requests skip the database lookup (and the trip to a
worker thread that a lookup needs). Sans I/O.

A verified token stays trusted until the database may have revoked it. The server
process that revokes a token forgets its site's entries at once; every process also
watches `Revocations` (counts of revoked tokens, deregistered sites, and the rows of
both tables), read from the database every `ATOLL_AUTH_CACHE_S`, and forgets every
entry when they say a token may have been revoked. So other processes honour a
revocation within that interval, as with a time-to-live of that length, but a site that
reports every ten seconds is not looked up every ten seconds (which a 1-second
time-to-live did: at 10,000 sites, a lookup per request). Revocations are rare; after
one, the cache refills as requests come. Only token hashes are kept, as in the database.
"""

import threading
from typing import NamedTuple


class Revocations(NamedTuple):
    """Counts that a revocation, a deregistration or a deleted row moves (tokens are never
    un-revoked, sites never re-registered: a name is reused by a new row)."""

    revoked_tokens: int
    tokens: int
    deregistered_sites: int
    sites: int

    def revoke_since(self, before: "Revocations") -> bool:
        """Whether a token trusted at `before` may have been revoked since: more revoked
        tokens or deregistered sites, or fewer rows. More rows alone is registrations and
        new tokens, which revoke nothing (and come in bursts: a fleet registering)."""
        return (
            self.revoked_tokens != before.revoked_tokens
            or self.deregistered_sites != before.deregistered_sites
            or self.tokens < before.tokens
            or self.sites < before.sites
        )


class TokenCache:
    def __init__(self, enabled: bool = True, max_entries: int = 100_000) -> None:
        self.enabled = enabled
        self.max_entries = max_entries
        self._lock = threading.Lock()  # routes in worker threads forget; the event loop reads
        self._entries: dict[str, tuple[str, str]] = {}
        self._revocations: Revocations | None = None
        self._epoch = 0  # raised whenever entries are forgotten

    @property
    def epoch(self) -> int:
        """Read before looking a token up, handed to `put` after: a lookup that raced a
        revocation (the entries were forgotten meanwhile) is not cached."""
        return self._epoch

    def get(self, token_hash: str) -> tuple[str, str] | None:
        """(site id, token id) if the token was verified and nothing revoked it since."""
        return self._entries.get(token_hash)

    def put(self, token_hash: str, site_id: str, token_id: str, epoch: int) -> None:
        with self._lock:
            if not self.enabled or epoch != self._epoch:
                return
            if len(self._entries) >= self.max_entries:
                # Dicts keep insertion order: drop the oldest tenth in one go.
                for key in list(self._entries)[: max(1, self.max_entries // 10)]:
                    del self._entries[key]
            self._entries[token_hash] = (site_id, token_id)

    def forget_site(self, site_id: str) -> None:
        """After revoking any of a site's tokens: its next request is checked afresh."""
        with self._lock:
            for key in [k for k, (s, _) in self._entries.items() if s == site_id]:
                del self._entries[key]
            self._epoch += 1

    def forget_all(self) -> None:
        """Revocations could not be read: trust nothing until they can be again."""
        with self._lock:
            self._entries.clear()
            self._revocations = None
            self._epoch += 1

    def watch(self, revocations: Revocations) -> bool:
        """The counts as the database has them now; forgets every entry if they say a
        token may have been revoked since the last call (or on the first: nothing tells
        what came before). Whether it forgot."""
        with self._lock:
            before, self._revocations = self._revocations, revocations
            if before is not None and not revocations.revoke_since(before):
                return False
            self._entries.clear()
            self._epoch += 1
            return True
