"""`kill -9` in the middle of a burst of writes loses no acknowledged write, and leaves no
half-written one: every site's report count matches the reports stored for it."""

import threading
import time
from pathlib import Path

import httpx
import pytest
from integration.registry.service import ADMIN, SIGNATURE, DatabaseFactory
from sqlalchemy import text

from atoll.localstack.registry import ServerProcess
from atoll.platform.service.database import make_engine
from atoll.registry.client import RegistryClient

pytestmark = pytest.mark.integration
WRITERS = 8
SITES = 16
KILL_AFTER_ACKS = 100


def test_kill_9_mid_burst_loses_no_acknowledged_report(
    fresh_database: DatabaseFactory, tmp_path: Path
) -> None:
    env = {"ATOLL_REPORT_RETENTION": "100000"}
    with fresh_database() as url:
        server = ServerProcess(url, ADMIN, tmp_path / "log", env=env).start()
        try:
            with RegistryClient(server.url, ADMIN) as admin:
                sites = [admin.register_site(f"burst-{i}", "r") for i in range(SITES)]
            acknowledged: list[tuple[str, str]] = []
            lock = threading.Lock()
            stop = threading.Event()

            def write(writer: int) -> None:
                # No retries: a request that failed is simply not acknowledged.
                with httpx.Client(base_url=server.url, timeout=10) as http:
                    i = 0
                    while not stop.is_set():
                        site = sites[(writer + i) % SITES]
                        i += 1
                        body = {
                            "class_priors": [writer + 1, i], "accuracy": 0.5, "samples": i,
                            "model_signature": SIGNATURE, "model_version": str(i),
                        }  # fmt: skip
                        try:
                            answer = http.post(
                                f"/v1/sites/{site.id}/reports",
                                json=body,
                                headers={"Authorization": f"Bearer {site.token}"},
                            )
                        except httpx.TransportError:
                            time.sleep(0.01)  # the server is gone; keep trying until told to stop
                            continue
                        if answer.status_code == 201:
                            with lock:
                                acknowledged.append((str(site.id), answer.json()["id"]))

            threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 60
            while len(acknowledged) < KILL_AFTER_ACKS and time.monotonic() < deadline:
                time.sleep(0.005)
            server.kill()  # SIGKILL while the writers are still sending
            killed_at = len(acknowledged)
            time.sleep(0.3)
            stop.set()
            for t in threads:
                t.join(timeout=30)
        finally:
            server.kill()
        assert killed_at >= KILL_AFTER_ACKS
        assert len(acknowledged) >= killed_at

        engine = make_engine(url, pool_size=1)
        try:
            with engine.connect() as conn:
                stored = {
                    r.id: r.site_id for r in conn.execute(text("SELECT id, site_id FROM reports"))
                }
                counts = dict(conn.execute(text("SELECT id, reports_total FROM sites")).all())
                per_site = dict(
                    conn.execute(
                        text("SELECT site_id, COUNT(*) FROM reports GROUP BY site_id")
                    ).all()
                )
        finally:
            engine.dispose()
        lost = [(s, r) for s, r in acknowledged if stored.get(r) != s]
        assert lost == [], f"{len(lost)} acknowledged report(s) lost"
        assert {s: n for s, n in counts.items() if n} == per_site  # no half-written report

        # And a new server on the same database serves them.
        site_id = acknowledged[-1][0]
        mine = {r for s, r in acknowledged if s == site_id}
        log = tmp_path / "log2"
        with ServerProcess(url, ADMIN, log) as again, RegistryClient(again.url, ADMIN) as admin:
            served = {str(r.id) for r in admin.reports(site_id, limit=500).reports}
        assert mine <= served
