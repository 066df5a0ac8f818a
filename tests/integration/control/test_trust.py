"""Trust across the WAN, against the whole deployment as processes (our own Redis, the
registry, the control plane with its CA, three edge agents that enrolled themselves):
no private key or secret crosses Redis or HTTP during a full job; a site's Redis
credentials reach only its own part of Redis; a revoked site cannot rejoin a running
job while the others go on."""

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import redis
from cryptography import x509
from integration.control.harness import (
    DIGITS_JOB,
    SITES,
    job_end,
    site_clock,
    three_sites,
    wait_for,
    wait_for_clock,
)

from atoll.localstack.deployment import LocalDeployment
from atoll.platform.bus.connection import Bus
from atoll.platform.bus.keys import BusKeys
from atoll.platform.bus.messages import Command
from atoll.platform.control.authority import Authority
from atoll.platform.control.client import ControlClient

pytestmark = pytest.mark.integration
JOB_S = 240
JOB = {**DIGITS_JOB, "clocks": 200, "geo": {"policy": "asp", "lease_s": 3.0}}
# What must never be seen on the bus or in an HTTP body: a PEM private key, a job secret
# (the field that carried one), and (below) each site's own key material.
FORBIDDEN = ("PRIVATE KEY", '"secret":', "secret=")


class Recorder:
    """An HTTP proxy in front of a service that keeps every request and response body."""

    def __init__(self, target_port: int) -> None:
        self.bodies: list[str] = []
        recorder, target = self, f"http://127.0.0.1:{target_port}"

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                answer = httpx.request(
                    self.command, target + self.path, content=body, headers=headers, timeout=30
                )
                recorder.bodies += [body.decode(errors="replace"), answer.text]
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class RecordedDeployment(LocalDeployment):
    """Every agent, and the test, reach the registry and the control plane through a
    Recorder each."""

    recorders: dict[str, Recorder]

    @property
    def control_url(self) -> str:
        return self.recorders["control"].url

    @property
    def registry_url(self) -> str:
        return self.recorders["registry"].url


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordedDeployment]:
    recorders: dict[str, Recorder] = {}
    try:
        with three_sites(
            tmp_path_factory.mktemp("trust"), RecordedDeployment, with_web=False
        ) as stack:
            stack.recorders = recorders = {
                "control": Recorder(stack.control_port),
                "registry": Recorder(stack.registry_port),
            }
            yield stack.start()
    finally:  # after the stack has stopped: its agents reach the services through these
        for recorder in recorders.values():
            recorder.server.shutdown()


@pytest.fixture
def client(deployment: LocalDeployment) -> Iterator[ControlClient]:
    with ControlClient(deployment.control_url, deployment.admin_token, retries=10) as control:
        yield control


class Monitor:
    """Every command Redis executes, as MONITOR shows it, in a thread of its own."""

    def __init__(self, url: str) -> None:
        self.lines: list[str] = []
        self._redis = redis.Redis.from_url(url, decode_responses=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._stop = threading.Event()

    def __enter__(self) -> "Monitor":
        self._thread.start()
        return self

    def _run(self) -> None:
        with self._redis.monitor() as monitor:
            for command in monitor.listen():
                self.lines.append(str(command.get("command", "")))
                if self._stop.is_set():
                    return

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._redis.ping()  # one more command, so that listen() sees the stop
        self._thread.join(timeout=5)


def test_a_full_job_sends_no_private_key_or_secret_over_redis_or_http(
    deployment: RecordedDeployment, client: ControlClient
) -> None:
    with Monitor(deployment.bus_url) as monitor:
        job = client.submit(JOB, name="scan")
        done = job_end(client, job.id, JOB_S)
        assert done.state == "completed", done.message
        client.commands(job_id=job.id)
    bodies = [b for r in deployment.recorders.values() for b in r.bodies]
    assert sum("BEGIN CERTIFICATE REQUEST" in b for b in bodies) == len(SITES)  # enrolments
    assert any("registered" in b or "class_priors" in b for b in bodies)  # agents' reports
    starts = [line for line in monitor.lines if "start_job" in line]
    assert len(starts) >= len(SITES), "the monitor saw every start command"
    assert len(monitor.lines) > 100
    forbidden = list(FORBIDDEN)
    for site in SITES:
        key = deployment.root / "edge" / site / "state" / "identity" / f"{site}.key"
        assert key.stat().st_mode & 0o777 == 0o600
        pem = key.read_text()
        assert "PRIVATE KEY" in pem  # made there, and only there
        forbidden += [line for line in pem.splitlines() if "-----" not in line]
    for line in monitor.lines + bodies:
        for word in forbidden:
            assert word not in line, line[:300]


def test_commands_not_signed_by_the_control_plane_or_replayed_are_refused_and_named(
    deployment: RecordedDeployment, client: ControlClient
) -> None:
    bus = Bus(deployment.bus_url, BusKeys(deployment.redis_prefix))
    try:
        stream = bus.keys.commands("virginia")
        recorded = [Command.decode(f) for _, f in bus.redis.xrange(stream)]
        start = next(c for c in recorded if c.kind == "start_job")
        # An old start command, as signed then (an hour ago), put on the stream again.
        old = Authority(deployment.ca_dir).signer.sign(start, time.time() - 3600)
        bus.redis.xadd(stream, dict(old.encode()))
        # A command the control plane never signed.
        forged = Command(id="forged-1", site="virginia", kind="drain", issued_at=time.time())
        bus.redis.xadd(stream, dict(forged.encode()))
    finally:
        bus.close()
    log = deployment.root / "edge" / "virginia" / "agent.log"
    wait_for("the refusals", lambda: "forged-1" in log.read_text(), 30)
    text = log.read_text()
    assert f"refused start_job command {start.id} for site virginia: it was signed" in text
    assert "(a replay)" in text
    assert "refused drain command forged-1 for site virginia: it is not signed" in text
    assert client.site("virginia").agent_state == "idle"  # neither was applied


def test_a_revoked_site_cannot_rejoin_a_running_job_while_the_others_go_on(
    deployment: RecordedDeployment, client: ControlClient
) -> None:
    clocks = 20_000  # longer than the test: it is cancelled at the end
    job = client.submit({**JOB, "clocks": clocks, "partition": "iid"}, name="revoked")
    wait_for_clock(client, job.id, "frankfurt", 20, JOB_S)
    client.revoke("frankfurt")
    deployment.agents["frankfurt"].kill_group()  # its site goes down with its agent
    # The other agents have the new revocation list (they read it every 10 s) ...
    cert = deployment.root / "edge" / "frankfurt" / "state" / "identity" / "frankfurt.pem"
    serial = x509.load_pem_x509_certificate(cert.read_bytes()).serial_number
    for site in ("virginia", "singapore"):
        crl = deployment.root / "edge" / site / "state" / "identity" / "crl.pem"
        wait_for(
            f"{site}'s revocation list",
            lambda crl=crl: x509.load_pem_x509_crl(
                crl.read_bytes()
            ).get_revoked_certificate_by_serial_number(serial),
            30,
        )
    # ... when frankfurt comes back with its revoked certificate and resumes its site.
    deployment.start_agent("frankfurt")
    peers_logs = [
        deployment.root / "edge" / site / "state" / "jobs" / job.id / "site.stderr"
        for site in ("virginia", "singapore")
    ]
    refusal = "no link with frankfurt: 'frankfurt' presented a revoked certificate"
    for path in peers_logs:
        wait_for(f"the refusal in {path}", lambda path=path: refusal in path.read_text(), JOB_S)
    # The others go on: their clocks move, frankfurt's does not.
    before = {s: site_clock(client, job.id, s) for s in ("virginia", "singapore", "frankfurt")}
    for site in ("virginia", "singapore"):
        wait_for(
            f"{site} to go on without frankfurt",
            lambda site=site: site_clock(client, job.id, site) >= before[site] + 50,
            JOB_S,
        )
    assert site_clock(client, job.id, "frankfurt") == before["frankfurt"]
    log = (deployment.root / "edge" / "frankfurt" / "agent.log").read_text()
    assert "invalid username-password pair" in log  # its Redis user is gone too
    client.cancel(job.id)
