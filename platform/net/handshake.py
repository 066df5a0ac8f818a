"""Mutual challenge-response over the per-job secret, sans I/O.

Both sides contribute a fresh nonce and their incarnation; each proves it knows the
secret by sending HMAC-SHA256(secret, transcript) where the transcript names its
role, both sites, both incarnations and both nonces. The secret never crosses the
wire, a recorded proof is useless with the next nonce, and the role label keeps an
attacker from reflecting one side's proof back at it.

This authenticates the site at connection time. It does not protect the frames that
follow: on links that leave a machine, TLS (see tls.py) keeps those from being read
or altered.
"""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

from atoll.platform.net.errors import LinkError, PeerRefused
from atoll.platform.net.frames import (
    INCARNATION_BYTES,
    NONCE_BYTES,
    PROTOCOL_VERSION,
    Hello,
)

Role = Literal["dialer", "acceptor"]
MIN_SECRET_BYTES = 16
_LABEL = b"atoll-net/1"


def new_job_secret() -> str:
    """A fresh secret for one job, to hand to every site out of band."""
    return secrets.token_urlsafe(32)


def secret_bytes(secret: str | bytes) -> bytes:
    value = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(value) < MIN_SECRET_BYTES:
        raise LinkError(
            f"the job secret must be at least {MIN_SECRET_BYTES} bytes; "
            "new_job_secret() makes a good one"
        )
    return value


def new_incarnation() -> bytes:
    return secrets.token_bytes(INCARNATION_BYTES)


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)


def dialer_of(site: str, other: str) -> str:
    """Which of two sites opens their connection: the lexicographically smaller name.
    A fixed rule means the pair never opens two connections at once and has to
    choose one; only one side retries, so reconnects do not race either."""
    return min(site, other)


@dataclass(frozen=True)
class Transcript:
    dialer: str
    acceptor: str
    dialer_incarnation: bytes
    acceptor_incarnation: bytes
    dialer_nonce: bytes
    acceptor_nonce: bytes

    @classmethod
    def of(cls, hello: Hello, acceptor_incarnation: bytes, acceptor_nonce: bytes) -> "Transcript":
        """The dialer's HELLO and the acceptor's incarnation and nonce (its CHALLENGE): both
        sides build the transcript from these same frames, so both sign the same bytes."""
        return cls(
            dialer=hello.site,
            acceptor=hello.peer,
            dialer_incarnation=hello.incarnation,
            acceptor_incarnation=acceptor_incarnation,
            dialer_nonce=hello.nonce,
            acceptor_nonce=acceptor_nonce,
        )

    def proof(self, secret: bytes, role: Role) -> bytes:
        message = b"".join(
            _field(part)
            for part in (
                _LABEL,
                role.encode(),
                self.dialer.encode(),
                self.acceptor.encode(),
                self.dialer_incarnation,
                self.acceptor_incarnation,
                self.dialer_nonce,
                self.acceptor_nonce,
            )
        )
        return hmac.new(secret, message, hashlib.sha256).digest()

    def verify(self, secret: bytes, role: Role, proof: bytes) -> bool:
        return hmac.compare_digest(self.proof(secret, role), proof)


def check_hello(hello: Hello, acceptor: str, directory: set[str] | frozenset[str]) -> None:
    """What an acceptor refuses before spending anything on a connection."""
    if hello.version != PROTOCOL_VERSION:
        raise PeerRefused(
            f"{hello.site!r} speaks link protocol {hello.version}, this site {PROTOCOL_VERSION}"
        )
    if hello.peer != acceptor:
        raise PeerRefused(f"{hello.site!r} dialed {hello.peer!r}, but this is {acceptor!r}")
    if hello.site not in directory:
        raise PeerRefused(f"unknown site {hello.site!r} is not in the directory")
    if dialer_of(hello.site, acceptor) != hello.site:
        raise PeerRefused(f"{acceptor!r} dials {hello.site!r}, not the other way round")


def _field(part: bytes) -> bytes:
    # length-prefixed, so no two different transcripts serialise to the same bytes
    return len(part).to_bytes(4, "big") + part
