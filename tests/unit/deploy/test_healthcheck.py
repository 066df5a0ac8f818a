"""deploy/healthcheck.py, the image's HEALTHCHECK: which role it finds, and what it asks."""

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from support import require


@pytest.mark.parametrize(
    ("argv", "args"),
    [
        (["atoll", "registry", "serve"], ["registry", "serve"]),
        # a console script, as /proc shows it: the interpreter, then the script
        (["/opt/venv/bin/python", "/opt/venv/bin/atoll", "control", "serve"], ["control", "serve"]),
        (["python", "-m", "atoll.registry", "serve"], ["registry", "serve"]),
        (["python3.11", "-m", "atoll.edge", "run"], ["edge", "run"]),
        (["python", "-m", "atoll.cli", "site", "run"], ["site", "run"]),
        (["/opt/venv/bin/python", "/usr/local/bin/atoll-healthcheck"], None),
        (["/sbin/docker-init", "--", "python", "-m", "atoll.edge", "run"], None),
        (["python", "-m", "http.server"], None),
        ([], None),
    ],
)  # fmt: skip
def test_atoll_args(healthcheck: ModuleType, argv: list[str], args: list[str] | None) -> None:
    assert healthcheck.atoll_args(argv) == args


def test_only_the_three_services_are_probed(healthcheck: ModuleType) -> None:
    assert healthcheck.service_of(["edge", "run", "--config", "x"]) == ("edge", "run")
    assert healthcheck.service_of(["control", "serve"]) == ("control", "serve")
    assert healthcheck.service_of(["site", "run"]) is None
    assert healthcheck.service_of(["registry", "migrate"]) is None
    assert healthcheck.check(None) == (True, "no atoll service runs here: nothing to probe")


def test_option(healthcheck: ModuleType) -> None:
    assert healthcheck.option(["serve", "--port", "1", "--host=::"], "--port") == "1"
    assert healthcheck.option(["serve", "--port", "1", "--host=::"], "--host") == "::"
    assert healthcheck.option(["serve", "--port=1", "--port", "2"], "--port") == "2"
    assert healthcheck.option(["serve", "--port"], "--port") is None


def test_finds_the_service_among_the_processes(healthcheck: ModuleType, tmp_path: Path) -> None:
    processes = {
        "1": ["/sbin/docker-init", "--", "python", "-m", "atoll.edge", "run"],
        "7": ["/opt/venv/bin/python", "-m", "atoll.edge", "run", "--config", "/etc/a.yaml"],
        "30": ["/opt/venv/bin/python", "-m", "atoll.cli", "site", "run", "--job", "j"],
        "31": ["/opt/venv/bin/python", "/usr/local/bin/atoll-healthcheck"],
    }
    for pid, argv in processes.items():
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (tmp_path / "self").mkdir()
    (tmp_path / "12").mkdir()  # a process gone since the listing: no cmdline to read
    found = healthcheck.find_service(tmp_path)
    assert found == ["edge", "run", "--config", "/etc/a.yaml"]


@pytest.fixture
def readyz() -> Iterator[tuple[int, dict[str, int]]]:
    """A stand-in service on a free port whose /readyz answers with `status["code"]`."""
    status = {"code": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = status["code"] if self.path == "/readyz" else 404
            body = b'{"problem": "the database is unreachable"}' if code != 200 else b"{}"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1], status
    finally:
        server.shutdown()
        server.server_close()


def test_a_service_is_healthy_when_ready(
    healthcheck: ModuleType, readyz: tuple[int, dict[str, int]]
) -> None:
    port, status = readyz
    args = ["registry", "serve", "--host", "0.0.0.0", "--port", str(port)]
    healthy, why = healthcheck.check(args)
    assert healthy, why
    status["code"] = 503
    healthy, why = healthcheck.check(["control", "serve", f"--port={port}"])
    assert not healthy
    assert "503" in why
    assert "the database is unreachable" in why


def test_a_service_that_does_not_answer_is_unhealthy(healthcheck: ModuleType) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))  # bound, never listening: nothing else can answer there
        port = held.getsockname()[1]
        healthy, why = healthcheck.check(["registry", "serve", "--port", str(port)])
    assert not healthy
    assert f"127.0.0.1:{port}" in why


def site_yaml(tmp_path: Path, name: str = "virginia") -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({"name": name, "state_dir": str(tmp_path / "state")}))
    return path


def test_an_agent_without_redis_is_unhealthy(
    healthcheck: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ATOLL_EDGE_CONFIG", raising=False)
    assert not healthcheck.check(["edge", "run"])[0]
    monkeypatch.setenv("ATOLL_REDIS_URL", "redis://:secret@127.0.0.1:1/0")
    healthy, why = healthcheck.check(["edge", "run", "--config", str(site_yaml(tmp_path))])
    assert not healthy
    assert "unreachable" in why
    assert "secret" not in why


@pytest.mark.integration
def test_an_agent_is_healthy_while_its_heartbeat_is_in_redis(
    healthcheck: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("redis-server") is not None, "redis-server")
    from atoll.localstack.deployment import LocalRedis
    from atoll.platform.bus.connection import Bus
    from atoll.platform.bus.keys import BusKeys
    from atoll.platform.bus.messages import Beat

    redis = LocalRedis(tmp_path / "redis").start()
    try:
        monkeypatch.setenv("ATOLL_REDIS_URL", redis.url)
        monkeypatch.setenv("ATOLL_REDIS_PREFIX", "hc")
        monkeypatch.setenv("ATOLL_EDGE_CONFIG", str(site_yaml(tmp_path)))
        healthy, why = healthcheck.check(["edge", "run"])
        assert not healthy
        assert "no heartbeat" in why
        bus = Bus(redis.url, BusKeys("hc"))
        bus.beat("virginia", Beat(time=time.time(), state="idle", incarnation="x"), ttl_s=0.3)
        healthy, why = healthcheck.check(["edge", "run"])
        assert healthy, why
        time.sleep(0.4)  # the key lapses: the control plane would show the site offline
        assert not healthcheck.check(["edge", "run"])[0]
        bus.close()
    finally:
        redis.stop()
