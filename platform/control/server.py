"""Running the service: checks first, so that a misconfiguration is one clear line, then uvicorn."""

import uvicorn

from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.service.server import preflight


def serve(
    settings: ControlSettings,
    host: str,
    port: int,
    migrate: bool = False,
    log_level: str = "info",
    access_log: bool = True,
) -> None:
    """One process: the dispatcher is the single writer of job states (no workers)."""
    preflight(settings, SCHEMA, migrate)
    uvicorn.run(
        "atoll.platform.control.main:create_app",
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        server_header=False,
    )
