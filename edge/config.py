"""The agent's configuration: a site.yaml for what the site is, `ATOLL_*` variables for
where the services are and for secrets (which never belong in the file).

Variables win over the file, so one file serves every environment. Nested fields take
a double underscore: `ATOLL_GEO__HOST=edge-a`.
"""

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from atoll.edge.devices import DevicesConfig
from atoll.platform.core.errors import AtollError
from atoll.platform.data.schema import SiteData
from atoll.platform.site.device import DeviceChoice

SiteName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]


class GeoListen(BaseModel):
    """Where the site's WAN links listen: shard s on `port + s`, at `host`, which is also
    the address the other sites dial (so it must resolve for them, and here)."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(9400, ge=1, le=65535)
    ports: int = Field(
        4, ge=1, le=64, description="consecutive ports: the most shards a job may use"
    )


class EdgeSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ATOLL_", env_nested_delimiter="__", extra="ignore"
    )

    name: SiteName = Field(
        description="the site's name; a job's topology names the sites it runs on"
    )
    region: SiteName = "local"
    labels: dict[str, str] = {}
    geo: GeoListen = GeoListen()
    state_dir: Path = Field(
        Path("/var/lib/atoll/edge"), description="registration, ledger, job folders, checkpoints"
    )
    data: SiteData | None = Field(
        None, description="the site's own data: format, path, schema (jobs with data: site)"
    )
    data_dir: Path | None = Field(
        None, description="public datasets root here, for emulated jobs; default ATOLL_DATA_DIR"
    )
    threads: int | None = Field(None, ge=1, description="torch threads per rank")
    device: DeviceChoice = Field("auto", description="cpu, cuda or auto (cuda when present)")
    bf16: bool = Field(False, description="bfloat16 autocast in the site's workers")
    workers: int = Field(1, ge=1, description="worker ranks this site can run (advertised)")
    heartbeat_s: float = Field(5.0, gt=0, description="offline after two missed heartbeats")
    registry_heartbeat_s: float = Field(30.0, gt=0)
    telemetry_interval_s: float = Field(1.0, gt=0, description="at most one step sample per this")
    telemetry_maxlen: int = Field(10_000, ge=100)
    max_restarts: int = Field(3, ge=0, description="a failed site is resumed this many times")
    devices: DevicesConfig | None = Field(
        None, description="the site's device tier: the agent runs its Flower SuperLink"
    )
    stop_timeout_s: float = Field(120.0, gt=0, description="longest wait for a site to stop")
    # Where the services are, and the secrets to reach them: from the environment.
    redis_url: SecretStr = SecretStr("redis://127.0.0.1:6379/0")
    redis_prefix: str = "atoll"
    control_url: str | None = Field(None, description="where the site enrols, the first time")
    enrol_token: SecretStr | None = Field(
        None, description="the site's one-time enrolment token (`atoll sites token NAME`)"
    )
    ca_file: Path | None = Field(
        None, description="the CA whose certificates the services it calls must have"
    )
    crl_poll_s: float = Field(10.0, gt=0, description="how often the revocation list is read")
    registry_url: str | None = Field(None, description="without one the agent does not register")
    registry_token: SecretStr | None = Field(None, description="this site's registry token")
    admin_token: SecretStr | None = Field(
        None, description="registers the site when it has no token yet"
    )

    @property
    def registry_token_value(self) -> str | None:
        return self.registry_token.get_secret_value() if self.registry_token else None

    @property
    def admin_token_value(self) -> str | None:
        if self.admin_token is None:
            return None
        first = self.admin_token.get_secret_value().split(",")[0].strip()
        return first or None

    @property
    def geo_endpoint(self) -> str:
        return f"ws://{self.geo.host}:{self.geo.port}"


def load_edge_settings(path: Path) -> EdgeSettings:
    """The file at `path`, overridden by `ATOLL_*` variables."""
    if not path.is_file():
        raise AtollError(f"no agent configuration at {path}")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise AtollError(f"{path} is not valid YAML: {e}") from e
    if not isinstance(raw, dict):
        raise AtollError(f"{path} must be a mapping of settings")
    secrets = sorted({"redis_url", "registry_token", "admin_token", "enrol_token"} & raw.keys())
    if secrets:
        raise AtollError(
            f"{path} holds {', '.join(secrets)}: secrets come from the environment "
            "(ATOLL_REDIS_URL, ATOLL_REGISTRY_TOKEN, ATOLL_ADMIN_TOKEN, ATOLL_ENROL_TOKEN), "
            "never from the file"
        )

    class FromFile(EdgeSettings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls, path))

    try:
        return FromFile()
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
        raise AtollError(f"{path}: {problems}") from e
