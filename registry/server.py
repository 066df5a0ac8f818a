"""Running the service: checks first, so that a misconfiguration is one clear line, then uvicorn."""

import os
import tempfile

import uvicorn

from atoll.platform.service.server import preflight
from atoll.registry.core.config import RegistrySettings
from atoll.registry.migrate import SCHEMA


def serve(
    settings: RegistrySettings,
    host: str,
    port: int,
    workers: int = 1,
    migrate: bool = False,
    log_level: str = "info",
    access_log: bool = True,
) -> None:
    preflight(settings, SCHEMA, migrate)
    if workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        # Worker processes share their counters through files here (prometheus_client's
        # multiprocess mode), so /metrics adds up every worker whichever one answers.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="atoll-registry-metrics-")
    uvicorn.run(
        "atoll.registry.main:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=access_log,
        server_header=False,
    )
