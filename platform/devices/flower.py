"""Flower's processes for a device site: its SuperLink, the run that starts Atoll's
ServerApp on it, and (for tests, the demo and the bench) SuperNodes.

Flower 1.41 serves the SuperLink's Fleet, Control and Runtime APIs on one HTTP port.
`flwr run` names the SuperLink through a connection in `$FLWR_HOME/config.toml`, so each
site gets a Flower home of its own. The SuperLink runs with runtime dependency
installation off: the ServerApp runs in Atoll's own environment (left on, Flower would
`uv sync` the app's dependencies, torch's CUDA build among them).

The SuperLink runs with `--isolation process`: the SuperExec that starts ServerApps is a
process of Atoll's, not the SuperLink's child. Left to the SuperLink, the SuperExec and
its ServerApp die with it (they watch its pid); on their own they outlive a SuperLink
restart, and the ServerApp reconnects (Flower's Runtime client retries) once the
SuperLink is back on the same state database. A shared secret lets only this SuperExec
in on the Runtime API, which the SuperLink serves on the devices' port.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from atoll.platform.core.errors import AtollError
from atoll.platform.devices.spec import RUN_CONFIG_KEY

SERVER_APP = "atoll.platform.devices.server_app:app"
CONNECTION = "site"  # the connection's name in the site's Flower home
_BIN = Path(sys.executable).parent


def flower_env(**extra: str) -> dict[str, str]:
    """The environment of a Flower process: this Python's bin folder first on PATH, since
    Flower starts its own commands by name (the SuperExec `flwr-serverapp`, a SuperNode
    `flwr-clientapp`), and Atoll may run from a virtualenv that was never activated."""
    path = os.pathsep.join([str(_BIN), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, **extra}


class FlowerError(AtollError):
    """A Flower command failed or a Flower process did not come up."""


@dataclass(frozen=True)
class FlowerTls:
    """PEM files: the SuperLink's certificate and key, and the CA devices verify it with."""

    ca_cert: Path
    cert: Path
    key: Path

    @classmethod
    def in_folder(cls, folder: Path) -> "FlowerTls":
        """The files as `atoll devices` and the edge agent keep them: one folder, fixed names."""
        return cls(folder / "ca.pem", folder / "superlink.pem", folder / "superlink.key")


@dataclass(frozen=True)
class SuperLinkOptions:
    port: int
    host: str = "127.0.0.1"
    tls: FlowerTls | None = None
    node_auth: bool = False  # only SuperNodes registered with `flwr supernode register`
    database: Path | None = None  # None: state in memory (a restart forgets runs)
    superexec_secret: Path | None = None  # the SuperExec's shared secret (raw bytes)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def local_address(self) -> str:
        """Where a process on this host reaches the SuperLink."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"{host}:{self.port}"


def superlink_command(options: SuperLinkOptions) -> list[str]:
    cmd = [str(_BIN / "flower-superlink"), "--disable-runtime-dependency-installation"]
    cmd += ["--host", options.host, "--port", str(options.port), "--isolation", "process"]
    if options.tls is None:
        cmd.append("--insecure")
    else:
        cmd += ["--ssl-ca-certfile", str(options.tls.ca_cert)]
        cmd += ["--ssl-certfile", str(options.tls.cert), "--ssl-keyfile", str(options.tls.key)]
    if options.node_auth:
        cmd.append("--enable-supernode-auth")
    if options.database is not None:
        cmd += ["--database", str(options.database)]
    if options.superexec_secret is not None:
        cmd += ["--superexec-auth-secret-file", str(options.superexec_secret)]
    return cmd


def superexec_command(options: SuperLinkOptions) -> list[str]:
    """The SuperExec that starts the site's ServerApps (Atoll's) as the SuperLink asks."""
    cmd = [str(_BIN / "flower-superexec"), "--runtime-api-address", options.local_address]
    if options.tls is None:
        cmd.append("--insecure")
    else:
        cmd += ["--root-certificates", str(options.tls.ca_cert)]
    if options.superexec_secret is not None:
        cmd += ["--superexec-auth-secret-file", str(options.superexec_secret)]
    return cmd


def write_superexec_secret(path: Path) -> Path:
    """A fresh shared secret for the SuperLink and its SuperExec, readable by us only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_bytes(secrets.token_hex(32).encode())
    return path


@dataclass(frozen=True)
class SuperNodeOptions:
    superlink: str  # host:port
    port: int  # this SuperNode's own Runtime API (one per SuperNode on a host)
    node_config: dict[str, int | float | str] = field(default_factory=dict)
    root_certificates: Path | None = None  # None: insecure
    private_key: Path | None = None  # with node auth on the SuperLink


def supernode_command(options: SuperNodeOptions) -> list[str]:
    cmd = [str(_BIN / "flower-supernode"), "--superlink", options.superlink]
    cmd += ["--port", str(options.port)]
    if options.root_certificates is None:
        cmd.append("--insecure")
    else:
        cmd += ["--root-certificates", str(options.root_certificates)]
    if options.private_key is not None:
        cmd += ["--auth-supernode-private-key", str(options.private_key)]
    if options.node_config:
        config = " ".join(f"{k}={_toml_value(v)}" for k, v in options.node_config.items())
        cmd += ["--node-config", config]
    return cmd


def _toml_value(value: int | float | str) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def write_flower_home(home: Path, options: SuperLinkOptions) -> Path:
    """A Flower home whose default connection is this site's SuperLink."""
    home.mkdir(parents=True, exist_ok=True)
    connection: dict[str, object] = {"address": options.local_address}
    if options.tls is None:
        connection["insecure"] = True
    else:
        connection["root-certificates"] = str(options.tls.ca_cert)
    config = {"superlink": {"default": CONNECTION, CONNECTION: connection}}
    (home / "config.toml").write_text(tomli_w.dumps(config))
    return home


def site_app(app_dir: Path, dest: Path, spec_file: Path) -> Path:
    """A copy of the device app whose ServerApp is Atoll's, reading `spec_file`.

    The ClientApp and everything else in the app stay as they are: devices get the
    app's own code.
    """
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(app_dir, dest, ignore=shutil.ignore_patterns("__pycache__", ".*", "*.fab"))
    pyproject = dest / "pyproject.toml"
    config = tomllib.loads(pyproject.read_text())
    try:
        app = config["tool"]["flwr"]["app"]
        app["components"]["serverapp"] = SERVER_APP
    except KeyError as e:
        raise FlowerError(f"{app_dir}/pyproject.toml is no Flower app: no {e} section") from e
    app.setdefault("config", {})[RUN_CONFIG_KEY] = str(spec_file.resolve())
    pyproject.write_text(tomli_w.dumps(config))
    return dest


def flwr(home: Path, *args: str, timeout: float = 300.0) -> dict[str, object]:
    """A `flwr` CLI command against the site's SuperLink, its JSON answer."""
    env = flower_env(FLWR_HOME=str(home))
    cmd = [str(_BIN / "flwr"), *args, "--format", "json"]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise FlowerError(f"{' '.join(cmd[:3])}: no answer in {timeout:.0f} s") from e
    try:
        answer: dict[str, object] = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise FlowerError(f"{' '.join(cmd[:3])}: {done.stderr.strip() or done.stdout}") from e
    if not answer.get("success", False):
        raise FlowerError(f"{' '.join(cmd[:3])}: {answer.get('error-message', answer)}")
    return answer


def submit(home: Path, app: Path, run_config: dict[str, int | float | str] | None = None) -> int:
    """Start a run of `app` on the site's SuperLink; its run id."""
    args = ["run", str(app), CONNECTION]
    if run_config:
        pairs = " ".join(f"{k}={_toml_value(v)}" for k, v in run_config.items())
        args += ["--run-config", pairs]
    return int(str(flwr(home, *args)["run-id"]))


def run_status(home: Path, run_id: int) -> str:
    """'pending', 'starting', 'running', or 'finished:<completed|failed|stopped>'."""
    runs = flwr(home, "ls", CONNECTION, "--run-id", str(run_id), timeout=60.0)["runs"]
    return str(runs[0]["status"])  # type: ignore[index]


def wait_listening(host: str, port: int, timeout: float, process: subprocess.Popen[bytes]) -> None:
    """Until `port` takes connections; FlowerError when `process` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise FlowerError(f"Flower exited ({process.returncode}) before listening on {port}")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.2)
    raise FlowerError(f"nothing listening on {host}:{port} after {timeout:.0f} s")


def write_node_keys(folder: Path, name: str) -> tuple[Path, Path]:
    """A SuperNode's key pair for node authentication (EC P-384, OpenSSH format, as
    Flower reads them): `name` (private, mode 0600) and `name.pub`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP384R1())
    private, public = folder / name, folder / f"{name}.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    private.chmod(0o600)
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
    )
    return private, public


def register_node(home: Path, public_key: Path) -> None:
    """Let the SuperNode holding `public_key`'s private key join the site's SuperLink."""
    flwr(home, "supernode", "register", str(public_key), CONNECTION)
