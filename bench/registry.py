"""Registry throughput and latency: report writes and neighbour queries with 1,000 and
10,000 registered sites, on SQLite and PostgreSQL.

The service runs as `atoll registry serve` in a process of its own; this process
drives it over loopback with a small asyncio HTTP/1.1 client on keep-alive
connections (cheap per request, so that the load generator, which shares the
machine's cores, takes as little as it can from the server). `concurrency`
connections each send their next request as soon as the last one is answered (a
closed loop); a request's latency is timed on its own, from sending to the end of its
answer. Every site reports once before measuring, all with one model signature: the
worst case for a neighbour query, which then ranks every other site.

Each row also says the server's and the load generator's CPU time per request and the
load average before and after, because on a shared machine wall-clock figures say as
much about the neighbours as about the service.

Targets: neighbour query p99 under 50 ms with 8 clients at once at 10,000 sites; at
least 1,000 report writes per second on PostgreSQL (32 clients).
"""

import asyncio
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np
from rich.console import Console
from rich.table import Table

from atoll.localstack.registry import ServerProcess, postgres_reachable, scratch_database
from atoll.platform.core.errors import AtollError
from atoll.platform.core.files import write_json

NEIGHBOUR_P99_TARGET_MS = 50.0
NEIGHBOUR_TARGET_CONCURRENCY = 8
WRITES_PER_S_TARGET = 1000.0
SIGNATURE = "bench-cnn-v1"
CLASSES = 10
_ADMIN = "bench-admin-" + uuid.uuid4().hex
_SEED_CONCURRENCY = 16
T = TypeVar("T")

Request = tuple[str, str, str, bytes | None]  # method, path, token, JSON body


class HttpConnection:
    """One keep-alive HTTP/1.1 connection; requests on it go one at a time."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, token: str, body: bytes | None) -> bytes:
        """The response body; raises on a status other than 2xx."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {token}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self.reader.readexactly(length)
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path} answered {status}: {payload[:300]!r}")
        return payload

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


@dataclass
class Measurement:
    latencies_s: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    answers: list[bytes] = field(default_factory=list)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


def process_tree_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of a process and its descendants, from /proc.

    Reported next to throughput because on a shared machine the wall-clock numbers say
    as much about the neighbours as about the service; its CPU per request does not."""
    total, pending = 0.0, [pid]
    ticks = os.sysconf("SC_CLK_TCK")
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


async def _drive(
    url: str, requests: Sequence[Request], concurrency: int, keep: bool
) -> Measurement:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    result = Measurement(answers=[b""] * len(requests) if keep else [])
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        connection = HttpConnection(host, port)
        try:
            while next_index < len(requests):
                i = next_index
                next_index += 1
                started = time.perf_counter()
                try:
                    answer = await connection.request(*requests[i])
                except (RuntimeError, OSError, asyncio.IncompleteReadError) as e:
                    result.errors.append(str(e))
                    connection.close()
                    connection = HttpConnection(host, port)
                    continue
                result.latencies_s.append(time.perf_counter() - started)
                if keep:
                    result.answers[i] = answer
        finally:
            connection.close()

    started, cpu = time.perf_counter(), time.thread_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    result.elapsed_s = time.perf_counter() - started
    result.client_cpu_s = time.thread_time() - cpu
    return result


def drive(
    url: str,
    requests: Sequence[Request],
    concurrency: int,
    keep: bool = False,
    server_pid: int | None = None,
) -> Measurement:
    """Sends `requests` over `concurrency` connections at once and measures them.

    The client runs on an event loop of its own in a thread of its own, so `drive` works
    whether or not the calling thread runs a loop already (a test after Playwright's sync
    API does), and nothing else shares that loop's time while it measures."""
    load_before = os.getloadavg()
    before = process_tree_cpu_s(server_pid) if server_pid else 0.0
    result = run_in_own_loop(_drive(url, requests, concurrency, keep))
    if server_pid:
        result.server_cpu_s = process_tree_cpu_s(server_pid) - before
    result.load_before, result.load_after = load_before, os.getloadavg()
    return result


def run_in_own_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` in a new thread; its result, or what it raised."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def main() -> None:
        try:
            outcome.append(asyncio.run(coroutine))
        except BaseException as e:  # handed to the caller's thread below
            failure.append(e)

    thread = threading.Thread(target=main, name="bench-client")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


def report_body(rng: np.random.Generator) -> bytes:
    priors = rng.dirichlet(np.full(CLASSES, 0.5))
    return json.dumps(
        {
            "id": str(uuid.uuid4()),
            "class_priors": [round(float(p), 6) for p in priors],
            "accuracy": round(float(rng.uniform(0.5, 0.99)), 4),
            "samples": int(rng.integers(100, 100_000)),
            "model_signature": SIGNATURE,
            "model_version": "1",
            "drift": False,
        }
    ).encode()


@dataclass(frozen=True)
class Site:
    id: str
    token: str


def seed(url: str, n: int, rng: np.random.Generator) -> tuple[list[Site], dict[str, Measurement]]:
    """n registered sites, each with one report."""
    registrations: list[Request] = [
        (
            "POST",
            "/v1/sites",
            _ADMIN,
            json.dumps({"name": f"bench-{i:05d}", "region": f"r{i % 8}"}).encode(),
        )
        for i in range(n)
    ]
    registered = drive(url, registrations, _SEED_CONCURRENCY, keep=True)
    _fail_on_errors("registering sites", registered)
    sites = [Site(a["id"], a["token"]) for a in map(json.loads, registered.answers)]
    first_reports = [
        ("POST", f"/v1/sites/{s.id}/reports", s.token, report_body(rng)) for s in sites
    ]
    reported = drive(url, first_reports, _SEED_CONCURRENCY)
    _fail_on_errors("first reports", reported)
    return sites, {"register": registered, "first report": reported}


def _fail_on_errors(what: str, m: Measurement) -> None:
    if m.errors:
        raise AtollError(f"{what}: {len(m.errors)} request(s) failed, e.g. {m.errors[0]}")


def measure_backend(
    backend: str,
    database_url: str,
    n_sites: int,
    writes: int,
    queries: int,
    concurrency: int,
    workers: int,
    log: Path,
    console: Console,
) -> list[dict]:
    rng = np.random.default_rng(n_sites)
    rows = []
    with ServerProcess(database_url, _ADMIN, log, workers=workers) as server:
        console.print(f"{backend}, {n_sites} sites: seeding")
        sites, seeding = seed(server.url, n_sites, rng)
        for name, m in seeding.items():
            rows.append(_row(backend, n_sites, name, _SEED_CONCURRENCY, m))

        def report(site: Site) -> Request:
            return ("POST", f"/v1/sites/{site.id}/reports", site.token, report_body(rng))

        def neighbours(site: Site) -> Request:
            return ("GET", f"/v1/sites/{site.id}/neighbours?k=5", site.token, None)

        phases: list[tuple[str, Callable[[Site], Request], int, int]] = [
            ("report write", report, writes, concurrency),
            ("neighbour query", neighbours, queries, 1),
            ("neighbour query", neighbours, queries, NEIGHBOUR_TARGET_CONCURRENCY),
        ]
        for name, make, count, workers_ in phases:
            picks = rng.integers(0, n_sites, size=count + count // 10)
            requests = [make(sites[i]) for i in picks]
            warmup, measured = requests[: count // 10], requests[count // 10 :]
            drive(server.url, warmup, workers_)
            console.print(f"{backend}, {n_sites} sites: {name} x{count}, concurrency {workers_}")
            pid = server.process.pid if server.process else None
            measurement = drive(server.url, measured, workers_, server_pid=pid)
            rows.append(_row(backend, n_sites, name, workers_, measurement))
    return rows


def _row(backend: str, n_sites: int, operation: str, concurrency: int, m: Measurement) -> dict:
    ms = np.asarray(m.latencies_s) * 1000
    return {
        "backend": backend,
        "sites": n_sites,
        "operation": operation,
        "concurrency": concurrency,
        "requests": len(m.latencies_s),
        "errors": len(m.errors),
        "per_s": len(m.latencies_s) / m.elapsed_s if m.elapsed_s else 0.0,
        "p50_ms": float(np.percentile(ms, 50)) if len(ms) else float("nan"),
        "p99_ms": float(np.percentile(ms, 99)) if len(ms) else float("nan"),
        "mean_ms": statistics.fmean(ms) if len(ms) else float("nan"),
        "server_cpu_ms_per_request": 1000 * m.server_cpu_s / len(ms) if len(ms) else float("nan"),
        "client_cpu_ms_per_request": 1000 * m.client_cpu_s / len(ms) if len(ms) else float("nan"),
        "load_average_before": list(m.load_before),
        "load_average_after": list(m.load_after),
    }


def run(
    site_counts: Sequence[int] = (1000, 10_000),
    backends: Sequence[str] = ("sqlite", "postgresql"),
    postgres_url: str = "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    writes: int = 5000,
    queries: int = 1000,
    concurrency: int = 32,
    workers: int = 1,
    out: Path = Path("bench/results/registry.json"),
    console: Console | None = None,
) -> dict:
    console = console or Console()
    if "postgresql" in backends and not postgres_reachable(postgres_url):
        raise AtollError(f"PostgreSQL is not reachable at {postgres_url}; pass --backend sqlite")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="atoll-bench-registry-") as tmp:
        folder = Path(tmp)
        for backend in backends:
            for n in site_counts:
                pg = postgres_url if backend == "postgresql" else None
                with scratch_database(folder, pg, purpose="bench") as url:
                    rows += measure_backend(
                        backend, url, n, writes, queries, concurrency, workers,
                        folder / "server.log", console,
                    )  # fmt: skip
    verdicts = _targets(rows)
    result = {
        "scenario": "registry",
        "cores": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "server_workers": workers,
        "classes": CLASSES,
        "targets": {
            "neighbour_query_p99_ms_at_10000_sites": NEIGHBOUR_P99_TARGET_MS,
            "report_writes_per_s_postgresql": WRITES_PER_S_TARGET,
        },
        "verdicts": verdicts,
        "rows": rows,
    }
    _print_table(rows, console)
    for line in verdicts:
        console.print(line)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, result)
    console.print(f"wrote {out}")
    return result


def _targets(rows: list[dict]) -> list[str]:
    """One line per target that these rows measure: the figure, and met or missed."""
    lines = []
    for r in rows:
        if (
            r["operation"] == "neighbour query"
            and r["sites"] == 10_000
            and r["concurrency"] == NEIGHBOUR_TARGET_CONCURRENCY
        ):
            met = r["p99_ms"] < NEIGHBOUR_P99_TARGET_MS
            lines.append(
                f"{r['backend']}: neighbour query p99 at 10,000 sites, {r['concurrency']} clients "
                f"at once: {r['p99_ms']:.1f} ms (target < {NEIGHBOUR_P99_TARGET_MS:.0f} ms): "
                f"{'met' if met else 'MISSED'}"
            )
        if r["operation"] == "report write" and r["backend"] == "postgresql":
            met = r["per_s"] >= WRITES_PER_S_TARGET
            lines.append(
                f"postgresql, {r['sites']} sites, {r['concurrency']} clients: "
                f"{r['per_s']:.0f} report writes/s "
                f"(target >= {WRITES_PER_S_TARGET:.0f}): {'met' if met else 'MISSED'}"
            )
    return lines


def _print_table(rows: list[dict], console: Console) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = Table(title=f"registry over loopback, {os.cpu_count()} cores, load average {load}")
    for column in (
        "backend",
        "sites",
        "operation",
        "conc.",
        "requests",
        "errors",
        "per s",
        "p50 ms",
        "p99 ms",
        "server CPU ms/req",
        "client CPU ms/req",
        "load avg (1 min)",
    ):
        table.add_column(column, justify="left" if column in {"backend", "operation"} else "right")
    for r in rows:
        table.add_row(
            r["backend"],
            str(r["sites"]),
            r["operation"],
            str(r["concurrency"]),
            str(r["requests"]),
            str(r["errors"]),
            f"{r['per_s']:.0f}",
            f"{r['p50_ms']:.1f}",
            f"{r['p99_ms']:.1f}",
            f"{r['server_cpu_ms_per_request']:.2f}" if r["server_cpu_ms_per_request"] else "-",
            f"{r['client_cpu_ms_per_request']:.2f}",
            f"{r['load_average_before'][0]:.1f} -> {r['load_average_after'][0]:.1f}",
        )
    console.print(table)
