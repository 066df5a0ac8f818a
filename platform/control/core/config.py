"""The control plane's settings, read from `ATOLL_*` environment variables."""

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from atoll.registry.core.config import MIN_ADMIN_TOKEN_CHARS, default_state_dir
from atoll.registry.core.security import hash_token

DEFAULT_PORT = 8800


class ControlSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATOLL_", extra="ignore")

    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db (it may be the "
        "registry's: the control plane's tables and migrations are its own); default a "
        "SQLite file under state_dir",
    )
    state_dir: Path = Field(default_factory=default_state_dir)
    admin_token: SecretStr | None = Field(None, description="comma-separated; guards every write")
    redis_url: SecretStr = SecretStr("redis://127.0.0.1:6379/0")
    redis_prefix: str = Field("atoll", description="the bus's keys; one per deployment")
    command_retry_s: float = Field(
        60.0, gt=0, description="a command an online site has not applied is sent again after"
    )
    sync_timeout_s: float = Field(
        300.0, gt=0, description="how long a site waits on the others before it fails"
    )
    lost_after_s: float = Field(
        30.0,
        gt=0,
        description="a running site offline this long, or whose clock has not moved for this "
        "long, no longer holds up the end of its job once the others are done",
    )
    tick_s: float = Field(0.25, gt=0, description="how often liveness and jobs are looked at")
    db_pool_size: int = Field(10, ge=1)

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.state_dir / 'control.db'}"

    @property
    def admin_token_hashes(self) -> frozenset[str]:
        return frozenset(hash_token(t) for t in self.admin_tokens)

    @property
    def admin_tokens(self) -> list[str]:
        if self.admin_token is None:
            return []
        return [t.strip() for t in self.admin_token.get_secret_value().split(",") if t.strip()]

    def admin_token_problem(self) -> str | None:
        tokens = self.admin_tokens
        if not tokens:
            return "ATOLL_ADMIN_TOKEN is not set: without it no job can ever be submitted"
        if any(len(t) < MIN_ADMIN_TOKEN_CHARS for t in tokens):
            return f"every ATOLL_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_CHARS} characters"
        return None


def control_settings() -> ControlSettings:
    # Read on each call: tests and the CLI change the environment between runs.
    return ControlSettings()
