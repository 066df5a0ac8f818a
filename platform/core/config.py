from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class AtollSettings(BaseSettings):
    """Machine-wide settings, read from `ATOLL_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="ATOLL_", extra="ignore")

    # Root under which each dataset has its own folder (fashion-mnist/, ...).
    # Debian's dataset-* packages install there.
    data_dir: Path = Path("/usr/share/datasets")


def settings() -> AtollSettings:
    # Read on each call: tests and the CLI change the environment between runs.
    return AtollSettings()
