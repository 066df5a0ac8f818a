"""The registry's FastAPI application.

`create_app()` reads `ATOLL_*` settings; uvicorn can also build it as a factory
(`uvicorn --factory atoll.registry.main:create_app`). Startup refuses a database
whose schema is not the one this code expects, and a missing admin token.
"""

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import numpy as np
from fastapi import FastAPI

from atoll.platform.service.app import service_app
from atoll.platform.service.database import Database
from atoll.platform.service.server import checked_database
from atoll.registry.api.deps import look_up_tokens
from atoll.registry.api.main import api_router
from atoll.registry.api.routes import health
from atoll.registry.core.batcher import Batcher, ShardedBatcher
from atoll.registry.core.config import RegistrySettings, registry_settings
from atoll.registry.core.limits import BodyLimit
from atoll.registry.core.metrics import REPORT_BATCH, RequestMetrics
from atoll.registry.core.snapshot import Facts, SiteRow
from atoll.registry.core.tokencache import TokenCache
from atoll.registry.crud import report_store
from atoll.registry.crud.neighbours import LiveSnapshot
from atoll.registry.crud.tokens import RevocationWatch
from atoll.registry.migrate import SCHEMA


def create_app(settings: RegistrySettings | None = None) -> FastAPI:
    settings = settings or registry_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with checked_database(settings, SCHEMA) as database:
            app.state.database = database
            snapshot = None
            if settings.neighbour_cache_s > 0:
                snapshot = LiveSnapshot(database, settings.neighbour_cache_s).start()
            app.state.snapshot = snapshot
            store = partial(_store_reports, database, settings.report_retention, snapshot)
            # SQLite takes one writer at a time: more writers would only queue on its lock.
            writers = settings.report_writers if database.backend == "postgresql" else 1
            app.state.report_writer = ShardedBatcher(
                [
                    Batcher(f"report-writer-{i}", store, settings.report_batch_max,
                            REPORT_BATCH.observe)
                    for i in range(writers)
                ]
            ).start()  # fmt: skip
            app.state.token_lookups = Batcher(
                "token-lookups", partial(look_up_tokens, database)
            ).start()
            cache: TokenCache = app.state.token_cache
            watch = None
            if cache.enabled:
                watch = RevocationWatch(database, cache, settings.auth_cache_s).start()
            # What startup made (the app, its routes and models, the snapshot: ~160,000
            # objects) lives as long as the process: out of the collector's sight, a full
            # collection no longer scans it, which took ~150 ms with the GIL held, the
            # tail of neighbour query latency (measured).
            gc.collect()
            gc.freeze()
            try:
                yield
            finally:
                gc.unfreeze()
                if watch is not None:
                    watch.close()
                app.state.token_lookups.close()
                app.state.report_writer.close()
                if snapshot is not None:
                    snapshot.close()

    app = service_app(
        settings,
        [api_router, health.router],
        lifespan,
        title="Atoll registry",
        summary="Site directory and Cartel metadata: sites, reports, neighbours, model lineage.",
        description=(
            "Every /v1 request needs `Authorization: Bearer <token>`: an admin token "
            "(`ATOLL_ADMIN_TOKEN`) or a site's token. Sites change only their own records. "
            "Errors are JSON (`ErrorBody`) naming each field and its problem."
        ),
    )
    app.state.token_cache = TokenCache(enabled=settings.auth_cache_s > 0)
    # The last added runs outermost: metrics time everything, refused big bodies too.
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(RequestMetrics)
    app.openapi = lambda: _openapi(app, settings)  # type: ignore[method-assign]
    return app


def _store_reports(
    database: Database,
    retention: int,
    snapshot: LiveSnapshot | None,
    batch: list[report_store.NewReport],
) -> list[report_store.Stored | Exception]:
    """The report writer's work: store a batch, then show the new reports to neighbour
    queries."""
    outcomes = report_store.add_reports(database, batch, retention)
    if snapshot is not None:
        snapshot.stored(
            [
                SiteRow(
                    str(report.site_id),
                    report.model_signature,
                    np.asarray(report.class_priors),
                    report.created_at.timestamp(),
                    Facts(report.model_version, report.accuracy, report.samples, report.drift),
                )
                for outcome in outcomes
                if not isinstance(outcome, Exception)
                for report, created in [outcome]
                if created
            ]
        )
    return outcomes


def _openapi(app: FastAPI, settings: RegistrySettings) -> dict[str, Any]:
    """FastAPI's own schema, with the limits this deployment is configured with.

    FastAPI makes it from every option the app was built with, caches it and makes it
    again when the routes change; the edits below are idempotent, so they are simply
    made on each call (a few keys: cheap)."""
    schema = FastAPI.openapi(app)
    components = schema["components"]["schemas"]
    for name in ("ReportCreate", "NeighbourQuery"):
        components[name]["properties"]["class_priors"]["maxItems"] = settings.max_classes
    components["NeighbourQuery"]["properties"]["k"]["maximum"] = settings.max_neighbours
    for parameter in schema["paths"]["/v1/sites/{site_id}/neighbours"]["get"]["parameters"]:
        if parameter["name"] == "k":
            parameter["schema"]["maximum"] = settings.max_neighbours
    _no_null_query_parameters(schema)
    return schema


def _no_null_query_parameters(schema: dict[str, Any]) -> None:
    """An optional query parameter is absent or a string, never null: say so, rather than
    pydantic's `anyOf: [..., null]`, so that clients and fuzzers read it right."""
    for operations in schema["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                options = parameter["schema"].get("anyOf", [])
                if parameter["in"] == "query" and {"type": "null"} in options:
                    rest = [o for o in options if o != {"type": "null"}]
                    if len(rest) == 1:
                        parameter["schema"] = {
                            **{k: v for k, v in parameter["schema"].items() if k != "anyOf"},
                            **rest[0],
                        }
