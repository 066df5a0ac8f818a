"""`atoll bench web`: the dashboard over real services holding many records.

A local stack (Redis, registry, control plane, dashboard; no agents) is filled with
`sites` declared sites and `jobs` submitted jobs through the control plane's API; then
a logged-in client times the dashboard's pages (time to the last byte of the rendered
page, on loopback: the server's render time and the calls it makes to the services), and
the time from a telemetry sample put on the Redis bus (as an agent does) to its arrival
on the dashboard's event stream, which the control plane and the dashboard relay: at an
SSE client, and on a job page open in chromium (when /usr/bin/chromium, or
ATOLL_CHROMIUM, and Playwright are there)."""

import contextlib
import json
import os
import shutil
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from atoll.localstack.deployment import LocalDeployment
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import Telemetry
from atoll.platform.control.client import ControlClient, parse_events

TARGET_RENDER_S = 0.3
TARGET_EVENT_S = 1.0
JOB = {"dataset": "digits", "model": "mlp", "topology": "three-continents", "clocks": 100}


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def fill(deployment: LocalDeployment, sites: int, jobs: int, console: Console) -> list[str]:
    regions = ["us-east-1", "eu-central-1", "ap-southeast-1", "eu-west-1", "sa-east-1"]
    ids = []
    with (
        ControlClient(deployment.control_url, deployment.admin_token) as client,
        Progress(console=console) as progress,
    ):
        task = progress.add_task("declaring sites, submitting jobs", total=sites + jobs)
        for i in range(sites):
            client.declare_site(f"site-{i:05d}", regions[i % len(regions)])
            progress.advance(task)
        for i in range(jobs):
            ids.append(client.submit(JOB, name=f"bench-{i:04d}").id)
            progress.advance(task)
    return ids


def log_in(deployment: LocalDeployment) -> httpx.Client:
    client = httpx.Client(base_url=deployment.web_url, timeout=30)
    answer = client.post(
        "/login",
        data={"token": deployment.admin_token, "next": "/"},
        headers={"Origin": deployment.web_url},
    )
    if answer.status_code != 303:
        raise RuntimeError(f"login failed: {answer.status_code}")
    return client


def time_pages(client: httpx.Client, pages: dict[str, list[str]], repeat: int) -> dict[str, Any]:
    found = {}
    for name, paths in pages.items():
        times = []
        for i in range(repeat):
            path = paths[i % len(paths)]
            started = time.perf_counter()
            answer = client.get(path)
            times.append(time.perf_counter() - started)
            if answer.status_code != 200 or "Stale:" in answer.text:
                raise RuntimeError(f"{path}: {answer.status_code}, or stale data")
        found[name] = {"p50_s": statistics.median(times), "p95_s": p95(times), "n": repeat}
    return found


def event_latency(
    deployment: LocalDeployment, client: httpx.Client, job_id: str, count: int
) -> dict[str, Any]:
    """Telemetry samples put on the bus one by one, timed to their arrival on the
    dashboard's event stream (an SSE client here) and, when chromium is at hand, to the
    job page's own event stream inside the browser (its script sees them)."""
    bus = Bus(deployment.bus_url, BusKeys(deployment.redis_prefix))
    arrived: dict[int, float] = {}
    ready = threading.Event()

    def listen() -> None:
        with client.stream("GET", "/events", params={"job": job_id}, timeout=60) as stream:
            for event in parse_events(stream.iter_lines()):
                ready.set()
                if event.name == "telemetry":
                    arrived[event.data["clock"]] = time.time() - event.data["time"]
                    if len(arrived) >= count:
                        return

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    ready.wait(10)
    with JobPage.open(deployment, job_id) as page:
        time.sleep(0.5)
        for clock in range(1, count + 1):
            sample = Telemetry(
                site="virginia",
                job_id=job_id,
                time=time.time(),
                kind="step",
                clock=clock,
                loss=1.0,
                wan_bytes=clock * 1000,
            )
            bus.publish_telemetry([sample], maxlen=10_000)
            time.sleep(0.1)
        reader.join(30)
        in_browser = page.latencies(count) if page else None
    bus.close()
    latencies = list(arrived.values())
    if len(latencies) < count:
        raise RuntimeError(f"only {len(latencies)} of {count} events arrived")
    return {"stream": stats(latencies), "browser": stats(in_browser) if in_browser else None}


def stats(latencies: list[float]) -> dict[str, Any]:
    return {"p50_s": statistics.median(latencies), "p95_s": p95(latencies), "n": len(latencies)}


class JobPage:
    """A job's page open in Debian's chromium (driven by Playwright), logged in, noting
    when each telemetry event reaches the page's event stream."""

    def __init__(self, page: Any) -> None:
        self.page = page

    @classmethod
    @contextlib.contextmanager
    def open(cls, deployment: LocalDeployment, job_id: str) -> Iterator["JobPage | None"]:
        chromium = Path(os.environ.get("ATOLL_CHROMIUM", "/usr/bin/chromium"))
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            yield None
            return
        if not chromium.exists():
            yield None
            return
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                page = browser.new_page()
                page.goto(f"{deployment.web_url}/login?next=/jobs/{job_id}")
                page.get_by_label("Token").fill(deployment.admin_token)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url(f"{deployment.web_url}/jobs/{job_id}")
                page.wait_for_function("() => window.atollEvents?.readyState === 1")
                page.evaluate(
                    """() => { window.benchSeen = [];
                    window.atollEvents.addEventListener("telemetry", e => {
                        window.benchSeen.push(Date.now() / 1000 - JSON.parse(e.data).time);
                    }); }"""
                )
                yield cls(page)
            finally:
                browser.close()

    def latencies(self, count: int) -> list[float]:
        self.page.wait_for_function(f"() => window.benchSeen.length >= {count}", timeout=30_000)
        seen: list[float] = self.page.evaluate("window.benchSeen")
        return seen


def run(sites: int, jobs: int, repeat: int, events: int, out: Path) -> None:
    console = Console(stderr=True)
    root = out.parent / "web-stack"  # fresh each run: its databases would hold the last run's
    shutil.rmtree(root, ignore_errors=True)
    deployment = LocalDeployment(root, [])
    try:
        with console.status("starting the services"):
            deployment.start()
        job_ids = fill(deployment, sites, jobs, console)
        client = log_in(deployment)
        pages = {
            "/sites (page 1 of many)": ["/sites"],
            "/sites filtered, sorted, page 7": ["/sites?region=eu-west-1&sort=-name&page=7"],
            "/jobs": ["/jobs"],
            "a site page": [
                f"/sites/site-{i:05d}" for i in range(0, sites, max(1, sites // repeat))
            ],
            "a job page": job_ids[:repeat],
        }
        pages["a job page"] = [f"/jobs/{j}" for j in pages["a job page"]]
        with console.status("timing the pages"):
            client.get("/sites")  # warm: the first request opens the services' connections
            timed = time_pages(client, pages, repeat)
        with console.status("timing events to the dashboard's stream"):
            latency = event_latency(deployment, client, job_ids[0], events)
    finally:
        deployment.stop()
    table = Table(title=f"dashboard with {sites:,} sites and {jobs} jobs in the services")
    for column in ("what", "p50 ms", "p95 ms", "target ms", "n"):
        table.add_column(column, justify="left" if column == "what" else "right")
    rows = [(name, t, TARGET_RENDER_S) for name, t in timed.items()]
    rows += [
        ("event: bus -> dashboard stream", latency["stream"], TARGET_EVENT_S),
        ("event: bus -> page in chromium", latency["browser"], TARGET_EVENT_S),
    ]
    for name, t, target_s in rows:
        target = f"{target_s * 1000:.0f}"
        if t is None:
            table.add_row(name, "–", "–", target, "no chromium")
        else:
            p50, p95_ms = f"{t['p50_s'] * 1000:.0f}", f"{t['p95_s'] * 1000:.0f}"
            table.add_row(name, p50, p95_ms, target, str(t["n"]))
    Console().print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"sites": sites, "jobs": jobs, "pages": timed, "event_latency": latency}
    out.write_text(json.dumps(record, indent=2))
    console.print(f"written: {out}")
