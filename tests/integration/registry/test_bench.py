"""`atoll bench registry`, scaled down: it seeds, measures, and writes its JSON."""

import asyncio
import json
from pathlib import Path

import pytest
from integration.registry.service import ADMIN, Registry
from rich.console import Console

from atoll.bench import registry as scenario

pytestmark = pytest.mark.integration


def test_the_registry_benchmark_runs_end_to_end(
    backend: str, postgres_url: str | None, tmp_path: Path
) -> None:
    out = tmp_path / "registry.json"
    result = scenario.run(
        site_counts=(30,),
        backends=(backend,),
        postgres_url=postgres_url or "",
        writes=60,
        queries=20,
        concurrency=4,
        out=out,
        console=Console(file=(tmp_path / "console.txt").open("w")),
    )
    rows = result["rows"]
    operations = [(r["operation"], r["concurrency"]) for r in rows]
    assert operations == [
        ("register", 16), ("first report", 16), ("report write", 4),
        ("neighbour query", 1), ("neighbour query", 8),
    ]  # fmt: skip
    assert all(r["errors"] == 0 for r in rows)
    assert all(r["per_s"] > 0 for r in rows)
    assert [r["requests"] for r in rows] == [30, 30, 60, 20, 20]
    assert all(r["p50_ms"] <= r["p99_ms"] for r in rows)
    assert rows[2]["server_cpu_ms_per_request"] > 0  # CPU time counts in 10 ms ticks
    assert json.loads(out.read_text())["rows"] == rows


def test_the_load_generator_runs_where_an_event_loop_already_runs(registry: Registry) -> None:
    """As in a pytest worker after Playwright's sync API: `drive` is called from a thread
    whose event loop is running, and still measures every request."""
    requests: list[scenario.Request] = [("GET", "/v1/sites?limit=1", ADMIN, None)] * 12

    async def inside_a_running_loop() -> scenario.Measurement:
        return scenario.drive(registry.url, requests, concurrency=3)

    measurement = asyncio.run(inside_a_running_loop())
    assert measurement.errors == []
    assert len(measurement.latencies_s) == 12
    assert all(latency > 0 for latency in measurement.latencies_s)
    assert measurement.elapsed_s >= max(measurement.latencies_s)
