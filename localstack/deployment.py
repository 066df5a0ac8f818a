"""A whole deployment on one machine, as processes: Redis (its own, unless given one), the
registry on SQLite, the control plane, one edge agent per site with loopback WAN links.

`atoll demo` runs it, and so do the integration tests: the very commands the compose
file runs, without Docker. Every process gets a session of its own, so that a Ctrl-C
reaches only the caller (which then stops them in order) and so that stopping one
stops everything it started (an agent's site, the site's ranks).
"""

import contextlib
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

from atoll.platform.control.authority import init_authority, issue_server_certificate
from atoll.platform.control.client import ControlClient
from atoll.platform.core.errors import AtollError
from atoll.platform.data.schema import SiteData
from atoll.platform.net.ports import free_loopback_port

_STOP_S = 60.0  # an agent's site finishes its clock and checkpoints within this


@dataclass
class Managed:
    """One service process, in a process group of its own."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Managed":
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv,
                env={**os.environ, **self.env},
                stdout=out,
                stderr=out,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signum)

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """SIGTERM, then (after `timeout_s`) SIGKILL to the whole group; returns the exit code."""
        if self.process is None:
            return None
        self.signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout_s)
        self.kill_group()
        return self.process.returncode

    def kill(self) -> None:
        """kill -9 of this process alone: what a crash looks like to everything else."""
        if self.alive():
            assert self.process is not None
            self.process.kill()
            self.process.wait()

    def kill_group(self) -> None:
        """SIGKILL to every process left in its group, and wait until there are none."""
        if self.process is None:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                break  # nothing left in the group
            time.sleep(0.05)
        self.process.wait()

    def tail(self, chars: int = 2000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def wait_until(
    what: str, check: Callable[[], bool], timeout_s: float, watch: Managed | None = None
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if watch is not None and not watch.alive():
            raise AtollError(f"{watch.name} exited while waiting for {what}: {watch.tail()}")
        try:
            if check():
                return
        except (httpx.HTTPError, OSError):
            pass
        time.sleep(0.1)
    raise AtollError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def http_ready(
    url: str, verify: Callable[[], ssl.SSLContext | bool] = lambda: True
) -> Callable[[], bool]:
    return lambda: httpx.get(url, timeout=2.0, verify=verify()).status_code == 200


@dataclass
class LocalRedis:
    """A redis-server of our own on a free port: nothing on disk, nothing shared."""

    folder: Path
    port: int = field(default_factory=free_loopback_port)
    managed: Managed | None = None
    # (certificate, key, CA): serve only TLS (rediss://), as docker-compose.yml does
    tls: tuple[Path, Path, Path] | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> "LocalRedis":
        binary = shutil.which("redis-server")
        if binary is None:
            raise AtollError("redis-server is not installed (apt-get install -y redis-server)")
        self.folder.mkdir(parents=True, exist_ok=True)
        argv = [
            binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(self.folder),
        ]  # fmt: skip
        if self.tls is not None:
            cert, key, ca = self.tls
            argv += [
                "--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(cert),
                "--tls-key-file", str(key), "--tls-ca-cert-file", str(ca),
                "--tls-auth-clients", "no",
            ]  # fmt: skip
        self.managed = Managed("redis", argv, {}, self.folder / "redis.log").start()

        def answers() -> bool:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw:
                s = raw
                if self.tls is not None:
                    context = ssl.create_default_context(cafile=str(self.tls[2]))
                    s = context.wrap_socket(raw, server_hostname="127.0.0.1")
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")

        wait_until("redis-server", answers, 20, self.managed)
        return self

    def restart(self, down_s: float = 0.0) -> None:
        """Stopped (it forgets everything: no persistence), then started on the same port."""
        assert self.managed is not None
        self.managed.kill_group()
        time.sleep(down_s)
        self.start()

    def stop(self) -> None:
        if self.managed is not None:
            self.managed.stop(5)


@dataclass
class AgentSpec:
    name: str
    region: str
    geo_port: int = field(default_factory=free_loopback_port)
    data: SiteData | None = None  # the site's own data (its site.yaml's `data:`)


@dataclass
class LocalDeployment:
    root: Path
    sites: list[AgentSpec]
    admin_token: str = field(default_factory=lambda: "local-admin-" + secrets.token_hex(16))
    redis_url: str | None = None  # None: a redis-server of its own
    redis_prefix: str = field(default_factory=lambda: f"atoll-{secrets.token_hex(4)}")
    control_database_url: str | None = None
    control_env: dict[str, str] = field(default_factory=dict)  # more ATOLL_* for it
    registry_database_url: str | None = None
    heartbeat_s: float = 1.0
    threads: int | None = 1  # torch threads per rank: the sites share this machine's cores
    python: str = sys.executable
    redis: LocalRedis | None = None
    registry: Managed | None = None
    control: Managed | None = None
    agents: dict[str, Managed] = field(default_factory=dict)
    control_port: int = field(default_factory=free_loopback_port)
    registry_port: int = field(default_factory=free_loopback_port)
    # The dashboard: a login token of its own kind (viewer, read-only) besides the admin's.
    web: Managed | None = None
    web_port: int = field(default_factory=free_loopback_port)
    viewer_token: str = field(default_factory=lambda: "local-viewer-" + secrets.token_hex(16))
    web_secret: str = field(default_factory=lambda: secrets.token_hex(32))
    with_web: bool = True
    # HTTPS for the three services and TLS for our own Redis, certificates from the CA
    # (as docker-compose.yml runs them); `atoll demo` stays plain HTTP on loopback.
    tls: bool = False

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def control_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.control_port}"

    @property
    def registry_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.registry_port}"

    @property
    def web_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.web_port}"

    @property
    def ca_file(self) -> Path:
        return self.ca_dir / "ca.pem"

    @property
    def verify(self) -> ssl.SSLContext | bool:
        """How this process checks the services' certificates."""
        return ssl.create_default_context(cafile=str(self.ca_file)) if self.tls else True

    def tls_env(self, serves: bool) -> dict[str, str]:
        """The TLS settings of a process: the CA to check others with, and (`serves`) the
        certificate and key it serves HTTPS with."""
        if not self.tls:
            return {}
        env = {"ATOLL_CA_FILE": str(self.ca_file)}
        if serves:
            env |= {
                "ATOLL_TLS_CERT_FILE": str(self.root / "tls" / "server.pem"),
                "ATOLL_TLS_KEY_FILE": str(self.root / "tls" / "server.key"),
            }
        return env

    def client(self) -> ControlClient:
        return ControlClient(self.control_url, self.admin_token, ca_file=self._ca_or_none())

    def _ca_or_none(self) -> str | None:
        return str(self.ca_file) if self.tls else None

    @property
    def ca_dir(self) -> Path:
        """The federation's CA, which the control plane holds."""
        return self.root / "ca"

    @property
    def bus_url(self) -> str:
        if self.redis_url is not None:
            return self.redis_url
        assert self.redis is not None, "start() first"
        return self.redis.url

    def start(self) -> "LocalDeployment":
        """Everything, in dependency order; returns once the services answer and every
        agent's heartbeat has reached the control plane."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.ca_file.exists():
            init_authority(self.ca_dir)
        if self.tls:
            tls = self.root / "tls"
            hosts = ["127.0.0.1", "localhost"]
            issue_server_certificate(self.ca_dir, hosts, tls / "server.pem", tls / "server.key")
        if self.redis_url is None:
            server_tls = None
            if self.tls:
                tls = self.root / "tls"
                server_tls = (tls / "server.pem", tls / "server.key", self.ca_file)
            self.redis = LocalRedis(self.root / "redis", tls=server_tls).start()
        self.start_registry()
        self.start_control()
        if self.with_web:
            self.start_web()
        for site in self.sites:
            self.start_agent(site.name)
        self.wait_online([s.name for s in self.sites])
        return self

    def online(self) -> dict[str, bool]:
        answer = httpx.get(f"{self.control_url}/v1/sites", timeout=5, verify=self.verify)
        sites = answer.json()["sites"]
        return {s["name"]: s["online"] for s in sites}

    def wait_online(self, names: list[str], timeout_s: float = 120) -> None:
        wait_until(
            f"{', '.join(names)} to be online",
            lambda: all(self.online().get(n) for n in names),
            timeout_s,
            self.control,
        )

    def start_registry(self) -> Managed:
        url = self.registry_database_url or f"sqlite:///{self.root / 'registry.db'}"
        argv = [
            self.python, "-m", "atoll.registry", "serve", "--port", str(self.registry_port),
            "--migrate", "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
        env = {
            "ATOLL_DATABASE_URL": url,
            "ATOLL_ADMIN_TOKEN": self.admin_token,
            **self.tls_env(serves=True),
        }
        self.registry = Managed("registry", argv, env, self.root / "registry.log").start()
        ready = http_ready(f"{self.registry_url}/readyz", lambda: self.verify)
        wait_until("the registry", ready, 60, self.registry)
        return self.registry

    def start_control(self) -> Managed:
        url = self.control_database_url or f"sqlite:///{self.root / 'control.db'}"
        argv = [
            self.python, "-m", "atoll.cli", "control", "serve", "--port", str(self.control_port),
            "--migrate", "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
        env = {
            "ATOLL_DATABASE_URL": url,
            "ATOLL_ADMIN_TOKEN": self.admin_token,
            "ATOLL_REDIS_URL": self.bus_url,
            "ATOLL_REDIS_PREFIX": self.redis_prefix,
            "ATOLL_CA_DIR": str(self.ca_dir),
            **self.tls_env(serves=True),
            **self.control_env,
        }
        self.control = Managed("control plane", argv, env, self.root / "control.log").start()
        ready = http_ready(f"{self.control_url}/readyz", lambda: self.verify)
        wait_until("the control plane", ready, 120, self.control)
        return self.control

    def start_web(self) -> Managed:
        self.web = self.dashboard(self.web_port, "web")
        return self.web

    def dashboard(self, port: int, name: str, settings: dict[str, str] | None = None) -> Managed:
        """A dashboard over this deployment's services, once it answers; `settings` adds
        or overrides its ATOLL_* environment. The caller stops it (start_web's is ours)."""
        argv = [
            self.python, "-m", "atoll.cli", "web", "serve", "--port", str(port),
            "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
        env = {
            "ATOLL_CONTROL_URL": self.control_url,
            "ATOLL_REGISTRY_URL": self.registry_url,
            "ATOLL_ADMIN_TOKEN": self.admin_token,
            "ATOLL_VIEWER_TOKEN": self.viewer_token,
            "ATOLL_WEB_SECRET": self.web_secret,
            **self.tls_env(serves=True),
            **(settings or {}),
        }
        web = Managed(f"dashboard ({name})", argv, env, self.root / f"{name}.log").start()
        ready = http_ready(f"{self.scheme}://127.0.0.1:{port}/healthz", lambda: self.verify)
        wait_until("the dashboard", ready, 60, web)
        return web

    def agent_config(self, name: str) -> Path:
        site = next(s for s in self.sites if s.name == name)
        folder = self.root / "edge" / name
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            "name": site.name,
            "region": site.region,
            "geo": {"host": "127.0.0.1", "port": site.geo_port, "ports": 1},
            "state_dir": str(folder / "state"),
            "heartbeat_s": self.heartbeat_s,
            "telemetry_interval_s": 0.5,
            "stop_timeout_s": _STOP_S,
            **({"threads": self.threads} if self.threads else {}),
            **({"data": site.data.model_dump(mode="json")} if site.data else {}),
        }
        path = folder / "site.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def start_agent(self, name: str) -> Managed:
        config = self.agent_config(name)
        argv = [self.python, "-m", "atoll.edge", "run", "--config", str(config)]
        env = {
            "ATOLL_REDIS_URL": self.bus_url,
            "ATOLL_REDIS_PREFIX": self.redis_prefix,
            "ATOLL_REGISTRY_URL": self.registry_url,
            "ATOLL_ADMIN_TOKEN": self.admin_token,
            "ATOLL_CONTROL_URL": self.control_url,
            **self.tls_env(serves=False),
        }
        if not (config.parent / "state" / "identity" / f"{name}.pem").exists():
            env["ATOLL_ENROL_TOKEN"] = self.enrol_token(name)
        agent = Managed(f"agent {name}", argv, env, config.parent / "agent.log").start()
        self.agents[name] = agent
        return agent

    def enrol_token(self, name: str) -> str:
        """The operator's step before a site's first start (`atoll sites add NAME`); its
        agent then enrols with the token."""
        with self.client() as client:
            return client.enrol_token(name).token

    def stop(self) -> None:
        """Agents first (their sites checkpoint), then the services; nothing is left running."""
        for agent in self.agents.values():
            agent.signal(signal.SIGTERM)
        for agent in self.agents.values():
            agent.stop(_STOP_S)
        for service in (self.web, self.control, self.registry):
            if service is not None:
                service.stop()
        if self.redis is not None:
            self.redis.stop()

    def __enter__(self) -> "LocalDeployment":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
