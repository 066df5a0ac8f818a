"""Prometheus metrics: requests by route and status, their latency, and sites by state.

Counters live in the process; site counts are read from the database at scrape
time, so every server process behind one database reports the same numbers.
"""

import os
import time
from collections.abc import Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

disable_created_metrics()  # the *_created series only double what Prometheus scrapes
REQUESTS = Counter(
    "atoll_registry_requests_total", "HTTP requests answered", ["method", "route", "status"]
)
LATENCY = Histogram(
    "atoll_registry_request_seconds",
    "Time to answer an HTTP request",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
)
REPORTS = Counter("atoll_registry_reports_total", "Reports stored")
REPORT_BATCH = Histogram(
    "atoll_registry_report_batch_size",
    "Reports committed together by the group-commit writer",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)

SiteCounts = Callable[[], dict[str, int]]


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            route = scope.get("route")
            # The route's template, never the raw path: ids would explode the label set.
            name = getattr(route, "path", "unmatched")
            method = scope["method"]
            REQUESTS.labels(method, name, str(status)).inc()
            LATENCY.labels(method, name).observe(time.perf_counter() - started)


class SitesCollector(Collector):
    def __init__(self, counts: SiteCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("atoll_registry_sites", "Sites by state", labels=["status"])
        for status, n in sorted(self.counts().items()):
            family.add_metric([status], n)
        yield family


def render(counts: SiteCounts) -> tuple[bytes, str]:
    """The exposition text: process-wide metrics, then the database's site counts."""
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        process = CollectorRegistry()
        MultiProcessCollector(process)
    else:
        process = REGISTRY
    sites = CollectorRegistry()
    sites.register(SitesCollector(counts))
    return generate_latest(process) + generate_latest(sites), CONTENT_TYPE_LATEST
