"""What the control-plane and edge-agent tests share: the services they need (a real Redis,
PostgreSQL when CI provides it), and small waits."""

import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
from cryptography.hazmat.primitives.serialization import Encoding
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr
from support import IN_CI, NO_POSTGRES, NO_REDIS, postgres_url, redis_url, require

from atoll.edge.identity import Identity, make_key_and_csr, store_enrolment
from atoll.localstack.deployment import AgentSpec, LocalDeployment, LocalRedis
from atoll.localstack.registry import postgres_schema
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.control.authority import Authority, init_authority
from atoll.platform.control.client import ControlClient
from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.main import create_app
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.control.schemas import JobOut
from atoll.platform.core.events import EventModel, of_kind
from atoll.platform.core.runlog import read_events
from atoll.platform.net.ports import free_loopback_port

# A small, quick geo job: 3 sites of the three-continents topology, on scikit-learn's
# digits, with a fixed seed. ASP over emulated WAN links.
DIGITS_JOB: dict[str, Any] = {
    "dataset": "digits",
    "model": "mlp",
    "topology": "three-continents",
    "partition": "dirichlet:0.5",
    "batch_size": 32,
    "clocks": 400,
    "eval_every": 50,
    "eval_samples": 360,
    "seed": 0,
}
SITES = {"virginia": "us-east-1", "frankfurt": "eu-central-1", "singapore": "ap-southeast-1"}


def shared_redis_url() -> str:
    """The shared Redis (support.redis_url); tests keep to keys of their own prefix."""
    url = redis_url()
    require(url is not None, NO_REDIS)
    assert url is not None
    return url


def _control_app(tmp_path: Path, bus: Bus, admin_token: str, **settings: Any) -> FastAPI:
    url = f"sqlite:///{tmp_path / 'control.db'}"
    SCHEMA.upgrade(url)
    config = ControlSettings(
        database_url=url,
        admin_token=SecretStr(admin_token),
        redis_url=SecretStr(bus.url),
        redis_prefix=bus.keys.prefix,
        tick_s=0.05,
        **settings,
    )
    return create_app(config)


@contextmanager
def control_api(
    tmp_path: Path, bus: Bus, admin_token: str, **settings: Any
) -> Iterator[TestClient]:
    """The control plane's app on a fresh SQLite database and `bus`, in a TestClient."""
    with TestClient(_control_app(tmp_path, bus, admin_token, **settings)) as client:
        yield client


@dataclass
class ServedControl:
    client: httpx.Client  # on the server's URL
    app: FastAPI


@contextmanager
def served_control_api(
    tmp_path: Path, bus: Bus, admin_token: str, **settings: Any
) -> Iterator[ServedControl]:
    """The same app served by uvicorn on loopback, for what reads its live event stream:
    Starlette's TestClient (1.3, which flwr pins) hands a streamed response over only
    once it ends, and an event stream never does."""
    app = _control_app(tmp_path, bus, admin_token, **settings)
    port = free_loopback_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for("the control plane to serve", lambda: server.started, 30)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield ServedControl(client, app)
    finally:
        server.should_exit = True
        thread.join(30)


@contextmanager
def scratch_bus(url: str) -> Iterator[Bus]:
    """A bus under a prefix of its own, whose keys are deleted afterwards."""
    bus = Bus(url, BusKeys(f"atoll-test-{secrets.token_hex(4)}"))
    try:
        yield bus
    finally:
        for key in bus.redis.scan_iter(f"{bus.keys.prefix}:*"):
            bus.redis.delete(key)
        bus.close()


@contextmanager
def own_redis(folder: Path) -> Iterator[LocalRedis]:
    """A redis-server of the test's own, which it may restart: never the shared one."""
    require(shutil.which("redis-server") is not None, "redis-server (apt-get install redis-server)")
    server = LocalRedis(folder).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def control_database(folder: Path) -> Iterator[str]:
    """PostgreSQL (a schema of its own) when there is one (support.postgres_url), which CI
    has; else a SQLite file. Under CI a missing PostgreSQL fails the test."""
    url = postgres_url()
    if url or IN_CI:
        require(url is not None, NO_POSTGRES)
        assert url is not None
        with postgres_schema(url, "control") as scoped:
            yield scoped
        return
    yield f"sqlite:///{folder / 'control.db'}"


D = TypeVar("D", bound=LocalDeployment)


@contextmanager
def three_sites(root: Path, kind: type[D], **options: Any) -> Iterator[D]:
    """The registry, the control plane and an agent per site of SITES, not started yet, on
    a Redis of the test's own (`stack.redis`, which a test may restart) and on
    control_database; stopped on the way out."""
    with own_redis(root / "redis") as redis, control_database(root) as database_url:
        stack = kind(
            root,
            [AgentSpec(name, region) for name, region in SITES.items()],
            redis_url=redis.url,
            control_database_url=database_url,
            heartbeat_s=0.5,
            **options,
        )
        stack.redis = redis
        try:
            yield stack
        finally:
            stack.redis = None  # own_redis stops it
            stack.stop()


def enrol_offline(ca_dir: Path, state_dir: Path, site: str) -> Identity:
    """What enrolment leaves in an agent's state (its own key, its certificate from the CA in
    `ca_dir`, made if missing), without a control plane: for tests that play one."""
    if not (ca_dir / "ca.pem").exists():
        init_authority(ca_dir)
    authority = Authority(ca_dir)
    identity = Identity(site, state_dir / "identity")
    cert = authority.sign_site(site, make_key_and_csr(identity), ["127.0.0.1"])
    pem = cert.public_bytes(Encoding.PEM).decode()
    crl, key = authority.crl([]), authority.signer.public_pem()
    store_enrolment(identity, pem, authority.cert_pem, crl, key, None, None)
    return identity


def wait_for(what: str, check: Callable[[], Any], timeout_s: float, poll_s: float = 0.2) -> Any:
    """The first truthy answer of `check`; fails naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            answer = check()
            if answer:
                return answer
        except Exception as e:  # a service restarting answers nothing for a moment
            last_error = e
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} ({last_error!r})")


def site_clock(client: ControlClient, job_id: str, site: str) -> int:
    """The site's clock. A job that ended before the test got what it waited for fails the
    test at once (pytest.fail is not an Exception, so wait_for does not retry it)."""
    job = client.job(job_id)
    if job.state in ("failed", "cancelled"):
        pytest.fail(f"job {job_id} {job.state}: {job.message}")
    return next(s.clock for s in job.sites if s.site == site)


def wait_for_clock(
    client: ControlClient, job_id: str, site: str, clock: int, timeout_s: float
) -> None:
    """Until the site's clock reaches `clock` (see `site_clock`)."""
    wait_for(
        f"{site} at clock {clock}", lambda: site_clock(client, job_id, site) >= clock, timeout_s
    )


def job_end(client: ControlClient, job_id: str, timeout_s: float) -> JobOut:
    """The job once it has ended: completed, failed or cancelled."""
    return wait_for(
        f"job {job_id} to end",
        lambda: (job := client.job(job_id)).state in ("completed", "failed", "cancelled") and job,
        timeout_s,
        poll_s=0.5,
    )


E = TypeVar("E", bound=EventModel)


def log_events(path: Path, kind: type[E]) -> list[E]:
    """The events of one kind a run log holds so far."""
    return of_kind(read_events(path), kind)
