"""Settings every Atoll service reads from `ATOLL_*` variables: its database, where its
state lives, and the admin tokens that guard its writes."""

import os
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from atoll.platform.core.errors import AtollError
from atoll.platform.service.security import hash_token

MIN_ADMIN_TOKEN_CHARS = 16


def default_state_dir() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "atoll"


class TlsSettings(BaseSettings):
    """HTTPS for a service: its certificate (chain) and key, both or neither. Clients check
    the certificate against ATOLL_CA_FILE (platform/service/client.py)."""

    model_config = SettingsConfigDict(env_prefix="ATOLL_", extra="ignore")

    tls_cert_file: Path | None = Field(None, description="PEM certificate chain: serve HTTPS")
    tls_key_file: Path | None = Field(None, description="its private key (PEM)")
    ca_file: Path | None = Field(
        None, description="the CA whose certificates it accepts from the services it calls"
    )

    def files(self) -> tuple[Path, Path] | None:
        """(certificate, key), or None for plain HTTP; AtollError when half set or missing."""
        if self.tls_cert_file is None and self.tls_key_file is None:
            return None
        if self.tls_cert_file is None or self.tls_key_file is None:
            raise AtollError("set both ATOLL_TLS_CERT_FILE and ATOLL_TLS_KEY_FILE, or neither")
        for path in (self.tls_cert_file, self.tls_key_file):
            if not path.is_file():
                raise AtollError(f"no TLS file at {path} (ATOLL_TLS_CERT_FILE/ATOLL_TLS_KEY_FILE)")
        return self.tls_cert_file, self.tls_key_file


def split_tokens(secret: SecretStr | None) -> list[str]:
    """The tokens of a comma-separated setting (so that a new token can be added before the
    old one is removed)."""
    if secret is None:
        return []
    return [t.strip() for t in secret.get_secret_value().split(",") if t.strip()]


class AdminTokenSettings(TlsSettings):
    """The admin tokens: a service's guard its writes; the dashboard presents the first to
    the services and logs a person in as admin with any."""

    admin_token: SecretStr | None = Field(None, description="comma-separated; guards every write")

    @property
    def admin_tokens(self) -> list[str]:
        return split_tokens(self.admin_token)

    @cached_property
    def admin_token_hashes(self) -> frozenset[str]:
        return frozenset(hash_token(t) for t in self.admin_tokens)


class ServiceSettings(AdminTokenSettings):
    # What a subclass names: its SQLite file, and what no admin token would make impossible.
    default_database_file: ClassVar[str]
    writes_guarded: ClassVar[str]

    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db; "
        "default a SQLite file under state_dir",
    )
    state_dir: Path = Field(
        default_factory=default_state_dir, description="where the default SQLite file lives"
    )
    db_pool_size: int = Field(10, ge=1)

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.state_dir / self.default_database_file}"

    def admin_token_problem(self) -> str | None:
        """Why the service should not start with these admin tokens, or None."""
        tokens = self.admin_tokens
        if not tokens:
            return f"ATOLL_ADMIN_TOKEN is not set: without it {self.writes_guarded}"
        if any(len(t) < MIN_ADMIN_TOKEN_CHARS for t in tokens):
            return f"every ATOLL_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} characters"
        return None
