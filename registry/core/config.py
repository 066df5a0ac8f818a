"""The registry's settings, read from `ATOLL_*` environment variables."""

import os
from functools import cached_property
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from atoll.registry.core.security import hash_token

DEFAULT_PORT = 8700
MIN_ADMIN_TOKEN_CHARS = 16


def default_state_dir() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "atoll"


class RegistrySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATOLL_", extra="ignore")

    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db; "
        "default a SQLite file under state_dir",
    )
    state_dir: Path = Field(
        default_factory=default_state_dir, description="where the default SQLite file lives"
    )
    # Comma-separated, so that a new admin token can be added before the old one is removed.
    admin_token: SecretStr | None = None
    liveness_window_s: float = Field(
        300.0, gt=0, description="a site is live if seen (registered, reported, heartbeat) within"
    )
    max_classes: int = Field(1000, ge=1, le=100_000)
    max_body_bytes: int = Field(64 * 1024, ge=1024)
    report_retention: int = Field(100, ge=1, description="reports kept per site")
    max_neighbours: int = Field(100, ge=1, description="largest k a neighbour query may ask")
    db_pool_size: int = Field(10, ge=1)
    neighbour_cache_s: float = Field(
        1.0,
        ge=0,
        description="how long a server process reuses the candidates it read for a neighbour "
        "query; answers reflect reports at most this old",
    )
    auth_cache_s: float = Field(
        1.0,
        ge=0,
        description="how long a verified site token is trusted without a lookup; a revocation "
        "takes effect at once on the server process that made it, within this on others",
    )

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.state_dir / 'registry.db'}"

    @cached_property
    def admin_token_hashes(self) -> frozenset[str]:
        return frozenset(hash_token(t) for t in self.admin_tokens)

    @property
    def admin_tokens(self) -> list[str]:
        if self.admin_token is None:
            return []
        return [t.strip() for t in self.admin_token.get_secret_value().split(",") if t.strip()]

    def admin_token_problem(self) -> str | None:
        """Why the service should not start with these admin tokens, or None."""
        tokens = self.admin_tokens
        if not tokens:
            return "ATOLL_ADMIN_TOKEN is not set: without it no site can ever be registered"
        if any(len(t) < MIN_ADMIN_TOKEN_CHARS for t in tokens):
            return f"every ATOLL_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} characters"
        return None


def registry_settings() -> RegistrySettings:
    # Read on each call: tests and the CLI change the environment between runs.
    return RegistrySettings()
