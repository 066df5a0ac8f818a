"""Commands signed by the control plane (Ed25519), checked by agents, sans I/O.

A command carries `signed_at` (when the control plane put it on the bus, again at each
retry) and a signature over everything else in it. An agent applies a command only when
the signature checks against the control plane's public key (given at enrolment) and
`signed_at` lies within a window of its own clock; within the window, the agent's
ledger of applied command ids turns a repeat into a duplicate. So a command written
by anyone but the control plane is refused, and so is an old one replayed later.
"""

import base64
import binascii
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from atoll.platform.bus.messages import Command

REPLAY_WINDOW_S = 600.0  # a command signed longer ago than this (or as far ahead) is refused


def signed_bytes(command: Command) -> bytes:
    """What the signature covers: the command as JSON without its signature."""
    return command.model_copy(update={"signature": None}).model_dump_json().encode()


@dataclass(frozen=True)
class CommandSigner:
    key: Ed25519PrivateKey

    @classmethod
    def from_pem(cls, pem: bytes) -> "CommandSigner":
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("the command signing key must be an Ed25519 key")
        return cls(key)

    def public_pem(self) -> str:
        return (
            self.key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )

    def sign(self, command: Command, signed_at: float) -> Command:
        stamped = command.model_copy(update={"signed_at": signed_at, "signature": None})
        signature = base64.b64encode(self.key.sign(signed_bytes(stamped))).decode()
        return stamped.model_copy(update={"signature": signature})


@dataclass(frozen=True)
class CommandVerifier:
    key: Ed25519PublicKey
    window_s: float = REPLAY_WINDOW_S

    @classmethod
    def from_pem(cls, pem: bytes) -> "CommandVerifier":
        key = serialization.load_pem_public_key(pem)
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("the control plane's command key must be an Ed25519 key")
        return cls(key)

    def problem(self, command: Command, now: float) -> str | None:
        """Why `command` must not be applied at wall-clock time `now`, or None."""
        if command.signature is None or command.signed_at is None:
            return "it is not signed by the control plane"
        try:
            self.key.verify(
                base64.b64decode(command.signature, validate=True), signed_bytes(command)
            )
        except (InvalidSignature, binascii.Error, ValueError):
            return "its signature is not the control plane's"
        age = now - command.signed_at
        if abs(age) > self.window_s:
            return (
                f"it was signed {age:.0f} s ago, outside the {self.window_s:.0f} s window "
                "(a replay)"
            )
        return None


def new_signing_key() -> bytes:
    """A new Ed25519 key, as PEM (PKCS8)."""
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
