"""The control plane's settings, read from `ATOLL_*` environment variables."""

from pathlib import Path
from typing import ClassVar

from pydantic import Field, SecretStr

from atoll.platform.service.settings import ServiceSettings

DEFAULT_PORT = 8800


class ControlSettings(ServiceSettings):
    """Its database may be the registry's: the control plane's tables and migrations are
    its own."""

    default_database_file: ClassVar[str] = "control.db"
    writes_guarded: ClassVar[str] = "no job can ever be submitted"

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
    ca_dir: Path | None = Field(
        None,
        description="the federation's CA (ca.pem, ca.key; `atoll ca init`): signs the sites' "
        "certificates at enrolment. Without it no site can enrol",
    )
    redis_site_users: bool = Field(
        True,
        description="give each enrolled site a Redis ACL user of its own (needs a control "
        "plane Redis user allowed ACL SETUSER/DELUSER)",
    )
    tick_s: float = Field(0.25, gt=0, description="how often liveness and jobs are looked at")
    events_heartbeat_s: float = Field(
        5.0, gt=0, description="/v1/events sends a heartbeat when quiet this long"
    )


def control_settings() -> ControlSettings:
    # Read on each call: tests and the CLI change the environment between runs.
    return ControlSettings()
