"""Sessions and CSRF tokens, sans I/O: what a cookie holds, how it is signed and checked.

A session cookie holds a random session id, the role (admin or viewer) and two times
(login, last use), signed with HMAC-SHA256 under ATOLL_WEB_SECRET; never a token. It is
reissued as it is used (sliding idle timeout), ends after `idle_s` unused or `max_s`
after login, and a logged-out id is refused for the rest of its life. The CSRF token of a
session is derived from its id, so a form can carry it and nothing needs storing.
"""

import base64
import hashlib
import hmac
import json
import secrets
import threading
from dataclasses import dataclass
from typing import Literal

from atoll.platform.service.security import hash_token, matches_any

Role = Literal["admin", "viewer"]
COOKIE = "atoll_session"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
REFRESH_S = 30.0  # reissue the cookie (moving its idle deadline) at most this often


@dataclass(frozen=True)
class Session:
    id: str
    role: Role
    login_at: float
    used_at: float

    @property
    def may_write(self) -> bool:
        return self.role == "admin"


def role_of(token: str, hashes: dict[str, frozenset[str]]) -> Role | None:
    """Which role a login token gives, comparing in constant time; None if it gives none."""
    digest = hash_token(token.strip())
    if matches_any(digest, hashes["admin"]):
        return "admin"
    if matches_any(digest, hashes["viewer"]):
        return "viewer"
    return None


class Sessions:
    def __init__(self, secret: str, idle_s: float, max_s: float) -> None:
        self._key = hashlib.sha256(b"atoll-web-session:" + secret.encode()).digest()
        self._csrf_key = hashlib.sha256(b"atoll-web-csrf:" + secret.encode()).digest()
        self.idle_s = idle_s
        self.max_s = max_s
        self._ended: dict[str, float] = {}  # session id -> when it would have expired anyway
        self._lock = threading.Lock()

    def new(self, role: Role, now: float) -> Session:
        return Session(secrets.token_urlsafe(24), role, now, now)

    def encode(self, session: Session) -> str:
        body = json.dumps([session.id, session.role, session.login_at, session.used_at])
        payload = base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")
        return f"{payload}.{self._sign(payload)}"

    def decode(self, cookie: str | None, now: float) -> Session | None:
        """The session a cookie holds, or None when it is forged, expired or ended."""
        if not cookie or "." not in cookie:
            return None
        payload, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
            sid, role, login_at, used_at = json.loads(raw)
        except (ValueError, TypeError):
            return None
        valid = role in ("admin", "viewer") and isinstance(sid, str)
        expired = now - used_at > self.idle_s or now - login_at > self.max_s
        if not valid or expired or used_at > now + 60:
            return None
        with self._lock:
            if sid in self._ended:
                return None
        return Session(sid, role, float(login_at), float(used_at))

    def touched(self, session: Session, now: float) -> Session | None:
        """The session with its last use moved to now, when its cookie is due to be
        reissued; None when the cookie it came in is fresh enough. A short idle timeout
        reissues it sooner, so that a session in use never idles out."""
        if now - session.used_at < min(REFRESH_S, self.idle_s / 10):
            return None
        return Session(session.id, session.role, session.login_at, now)

    def end(self, session: Session, now: float) -> None:
        with self._lock:
            self._ended = {s: t for s, t in self._ended.items() if t > now}  # forget the past
            self._ended[session.id] = session.login_at + self.max_s

    def csrf_token(self, session: Session) -> str:
        return hmac.new(self._csrf_key, session.id.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session: Session, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given or "", self.csrf_token(session))

    def _sign(self, payload: str) -> str:
        mac = hmac.new(self._key, payload.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def same_origin(origin: str | None, expected: str) -> bool:
    """A state-changing request must come from the dashboard's own pages: its Origin
    header equals the dashboard's origin (scheme, host and port). A missing one fails."""
    return origin is not None and origin.rstrip("/").lower() == expected.rstrip("/").lower()


def safe_next(target: str | None) -> str:
    """Where to go after login: a path on this site only (never `//evil` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
