"""Bearer tokens: how they are made, stored and matched, sans I/O.

Site tokens carry 256 random bits, so a single SHA-256 is as strong as a slow
password hash here and lets the service find a token's row by an indexed hash
lookup. Only the hash is stored; the token itself is shown once, at issue.
"""

import hashlib
import hmac
import secrets
from collections.abc import Iterable

TOKEN_PREFIX = "atoll_"  # lets secret scanners and people recognise a leaked token
_SHOWN_CHARS = 10  # of the token, kept in clear to tell tokens apart in listings


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_token_id() -> str:
    return secrets.token_hex(8)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_hint(token: str) -> str:
    """The start of a token, safe to show: too short to guess the rest from."""
    return token[:_SHOWN_CHARS]


def bearer_token(authorization: str | None) -> str | None:
    """The token from an `Authorization: Bearer <token>` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def matches_any(token_hash: str, admin_hashes: Iterable[str]) -> bool:
    """Constant-time comparison against every admin hash, so timing tells nothing."""
    found = False
    for admin in admin_hashes:
        found |= hmac.compare_digest(token_hash, admin)
    return found
