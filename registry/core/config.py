"""The registry's settings, read from `ATOLL_*` environment variables."""

from typing import ClassVar

from pydantic import Field

from atoll.platform.service.settings import ServiceSettings

DEFAULT_PORT = 8700


class RegistrySettings(ServiceSettings):
    default_database_file: ClassVar[str] = "registry.db"
    writes_guarded: ClassVar[str] = "no site can ever be registered"

    liveness_window_s: float = Field(
        300.0, gt=0, description="a site is live if seen (registered, reported, heartbeat) within"
    )
    max_classes: int = Field(1000, ge=1, le=100_000)
    max_body_bytes: int = Field(64 * 1024, ge=1024)
    report_retention: int = Field(100, ge=1, description="reports kept per site")
    max_neighbours: int = Field(100, ge=1, description="largest k a neighbour query may ask")
    # 5 s, not less: a reload of 10,000 sites is tens of ms of Python holding the GIL, and
    # once a second it halved the report writes the same process could take (measured
    # with bench registry); next to a liveness window of minutes, 5 s is fresh enough.
    neighbour_cache_s: float = Field(
        5.0,
        ge=0,
        description="a server process keeps every site's latest priors in memory for neighbour "
        "queries, told at once of its own reports, heartbeats and deregistrations and reloaded "
        "from the database this often, so answers reflect other server processes' changes at "
        "most this old; 0: read the database at each query",
    )
    report_writers: int = Field(
        4,
        ge=1,
        le=64,
        description="group-commit writer threads per server process on PostgreSQL, each for "
        "its share of the sites, so that their batches' waits on the database overlap "
        "(SQLite: always one)",
    )
    report_batch_max: int = Field(
        256,
        ge=1,
        le=10_000,
        description="most reports the group-commit writer stores in one transaction",
    )
    auth_cache_s: float = Field(
        1.0,
        ge=0,
        description="how often a server process reads the database's count of token "
        "revocations and deregistrations, forgetting the tokens it verified when it moved: a "
        "revocation takes effect at once on the server process that made it, within this on "
        "others; 0: no cache, every request's token is looked up",
    )


def registry_settings() -> RegistrySettings:
    # Read on each call: tests and the CLI change the environment between runs.
    return RegistrySettings()
