"""Many sites reporting at once lose nothing; racing registrations of a name make one site."""

import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from integration.registry.service import ADMIN, SIGNATURE, DatabaseFactory

from atoll.localstack.registry import ServerProcess
from atoll.registry.client import RegistryClient, RegistryError

pytestmark = pytest.mark.integration
THREADS = 8
REPORTS_PER_THREAD = 25
SITES = 12


def run_threads(target: Callable[[int], None], count: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # reported to the test, not lost in a thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return errors


def test_concurrent_reports_lose_nothing(fresh_database: DatabaseFactory, tmp_path: Path) -> None:
    env = {"ATOLL_REPORT_RETENTION": "100000"}
    with fresh_database() as url, ServerProcess(url, ADMIN, tmp_path / "log", env=env) as server:
        with RegistryClient(server.url, ADMIN) as admin:
            sites = [admin.register_site(f"hammer-{i}", "r") for i in range(SITES)]
        acknowledged: dict[str, list[str]] = defaultdict(list)
        lock = threading.Lock()

        def hammer(thread: int) -> None:
            clients = {s.id: RegistryClient(server.url, s.token, timeout_s=60) for s in sites}
            try:
                for i in range(REPORTS_PER_THREAD):
                    site = sites[(thread + i) % SITES]  # every site hears from several threads
                    report = clients[site.id].report(
                        site.id, [thread + 1, i + 1], 0.5, i, SIGNATURE, f"{thread}.{i}"
                    )
                    with lock:
                        acknowledged[str(site.id)].append(str(report.id))
            finally:
                for client in clients.values():
                    client.close()

        assert run_threads(hammer, THREADS) == []
        assert sum(map(len, acknowledged.values())) == THREADS * REPORTS_PER_THREAD
        with RegistryClient(server.url, ADMIN) as admin:
            for site in sites:
                stored = admin.reports(site.id, limit=500).reports
                ids = acknowledged[str(site.id)]
                assert sorted(str(r.id) for r in stored) == sorted(ids)
                assert sorted(r.seq for r in stored) == list(range(1, len(ids) + 1))
                assert admin.get_site(site.id).reports_total == len(ids)


def test_racing_registrations_of_one_name_make_one_site(
    fresh_database: DatabaseFactory, tmp_path: Path
) -> None:
    outcomes: Counter[int] = Counter()
    lock = threading.Lock()
    with fresh_database() as url, ServerProcess(url, ADMIN, tmp_path / "log") as server:

        def register(_: int) -> None:
            with RegistryClient(server.url, ADMIN) as admin:
                try:
                    admin.register_site("contested", "r")
                    status = 201
                except RegistryError as e:
                    status = e.status
            with lock:
                outcomes[status] += 1

        assert run_threads(register, THREADS) == []
        assert outcomes == {201: 1, 409: THREADS - 1}
        with RegistryClient(server.url, ADMIN) as admin:
            assert [s.name for s in admin.iter_sites()] == ["contested"]
