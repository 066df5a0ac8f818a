"""The dashboard's settings, read from `ATOLL_*` environment variables like every
other Atoll service's (pydantic-settings)."""

from typing import ClassVar

from pydantic import Field, SecretStr

from atoll.platform.service.security import hash_token
from atoll.platform.service.settings import (
    MIN_ADMIN_TOKEN_CHARS,
    AdminTokenSettings,
    split_tokens,
)

DEFAULT_PORT = 8900
MIN_SECRET_CHARS = 32


class WebSettings(AdminTokenSettings):
    service: ClassVar[str] = "the dashboard"

    control_url: str = Field("http://127.0.0.1:8800", description="the control plane's URL")
    registry_url: str = Field("http://127.0.0.1:8700", description="the registry's URL")
    viewer_token: SecretStr | None = Field(
        None, description="comma-separated read-only tokens: pages, no writes"
    )
    web_secret: SecretStr | None = Field(
        None, description="signs session cookies and CSRF tokens; at least 32 characters"
    )
    session_idle_s: float = Field(
        1800.0, gt=0, description="a session unused this long ends (log in again)"
    )
    session_max_s: float = Field(43200.0, gt=0, description="a session ends this long after login")
    service_timeout_s: float = Field(
        2.0,
        gt=0,
        description="a page waits at most this long for a service before it shows "
        "the last known data, marked stale",
    )
    secure_cookies: bool | None = Field(
        None, description="Secure session cookies; default: when the page was served over HTTPS"
    )
    heartbeat_s: float = Field(5.0, gt=0, description="SSE heartbeat to browsers")

    @property
    def viewer_tokens(self) -> list[str]:
        return split_tokens(self.viewer_token)

    @property
    def service_token(self) -> str:
        """What the dashboard presents to the control plane and the registry."""
        return self.admin_tokens[0]

    def role_hashes(self) -> dict[str, frozenset[str]]:
        return {
            "admin": frozenset(hash_token(t) for t in self.admin_tokens),
            "viewer": frozenset(hash_token(t) for t in self.viewer_tokens),
        }

    def startup_problem(self) -> str | None:
        """Why the dashboard should not start as configured, or None."""
        if not self.admin_tokens:
            return "ATOLL_ADMIN_TOKEN is not set: the dashboard needs it to talk to the services"
        if any(len(t) < MIN_ADMIN_TOKEN_CHARS for t in self.admin_tokens + self.viewer_tokens):
            return (
                f"every ATOLL_ADMIN_TOKEN and ATOLL_VIEWER_TOKEN must be at least "
                f"{MIN_ADMIN_TOKEN_CHARS} characters"
            )
        if set(self.admin_tokens) & set(self.viewer_tokens):
            return "a token is both in ATOLL_ADMIN_TOKEN and ATOLL_VIEWER_TOKEN"
        secret = self.web_secret.get_secret_value() if self.web_secret else ""
        if len(secret) < MIN_SECRET_CHARS:
            return (
                f"ATOLL_WEB_SECRET must be set to at least {MIN_SECRET_CHARS} random characters "
                "(e.g. `openssl rand -hex 32`): it signs the session cookies"
            )
        return None


def web_settings() -> WebSettings:
    # Read on each call: tests and the CLI change the environment between runs.
    return WebSettings()
