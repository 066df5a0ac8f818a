#!/usr/bin/env python
"""`atoll-healthcheck`: the image's HEALTHCHECK, one script for every role the image plays.

The role is read from the service's command line, found among the container's processes
(under `init: true` or `docker run --init` the service is not PID 1):

- `registry serve`, `control serve`: GET /readyz on the port the service listens on.
  200 means the database answers with its schema current (and, for the control plane,
  Redis answers too): what a service that depends on it needs, not merely a live process.
- `web serve` (the dashboard): GET /readyz, 200 when the control plane answers it.
- `edge run`: the agent has no HTTP port; its heartbeat is its liveness. Healthy while
  the site's liveness key is set in Redis, that is, while the control plane would show
  the site online (the key lapses two heartbeats after the last beat).
- anything else (`atoll train`, `--help`): nothing long-running to probe, so healthy.

Exit 0 when healthy, 1 when not, with one line saying why (`docker inspect` shows it).
Only the standard library is imported for the HTTP roles, so the probe stays cheap.
"""

import os
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

# `python -m <module>` forms that run the same Typer apps as `atoll <prefix...>`.
MODULE_PREFIX: dict[str, list[str]] = {
    "atoll.cli": [],
    "atoll.registry": ["registry"],
    "atoll.edge": ["edge"],
}
DEFAULT_PORT = {"registry": 8700, "control": 8800, "web": 8900}
SERVICES = (("registry", "serve"), ("control", "serve"), ("web", "serve"), ("edge", "run"))
TIMEOUT_S = 5.0


def atoll_args(argv: Sequence[str]) -> list[str] | None:
    """The `atoll` arguments a process's argv amounts to, or None when it runs no atoll CLI.

    `atoll registry serve`, `/opt/venv/bin/python /opt/venv/bin/atoll registry serve` (what
    /proc shows for a console script) and `python -m atoll.registry serve` all give
    ["registry", "serve"].
    """
    args = list(argv)
    if args and Path(args[0]).name.startswith("python"):
        if len(args) >= 3 and args[1] == "-m" and args[2] in MODULE_PREFIX:
            return [*MODULE_PREFIX[args[2]], *args[3:]]
        args = args[1:]
    if args and Path(args[0]).name == "atoll":
        return args[1:]
    return None


def service_of(args: Sequence[str]) -> tuple[str, str] | None:
    """("registry", "serve"), ("control", "serve"), ("web", "serve") or ("edge", "run"), or
    None."""
    if len(args) >= 2 and (args[0], args[1]) in SERVICES:
        return args[0], args[1]
    return None


def option(args: Sequence[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value` in `args` (the last one wins, as in click)."""
    found = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
    return found


def find_service(proc: Path = Path("/proc")) -> list[str] | None:
    """The atoll arguments of the container's service process, the oldest if several."""
    pids = sorted(int(p.name) for p in proc.iterdir() if p.name.isdigit())
    for pid in pids:
        try:
            raw = (proc / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue  # gone since the listing, or not ours to read
        args = atoll_args([a.decode(errors="replace") for a in raw.split(b"\0") if a])
        if args is not None and service_of(args) is not None:
            return args
    return None


def check_http(
    url: str, timeout_s: float = TIMEOUT_S, context: ssl.SSLContext | None = None
) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as response:
            return response.status == 200, f"{url}: {response.status}"
    except urllib.error.HTTPError as e:
        body = e.read(300).decode(errors="replace")
        return False, f"{url}: {e.code} {body}"
    except (urllib.error.URLError, OSError) as e:
        return False, f"{url}: {getattr(e, 'reason', e)}"


def check_service(args: Sequence[str]) -> tuple[bool, str]:
    role = args[0]
    host = option(args, "--host") or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"  # listening everywhere: loopback reaches it
    elif ":" in host:
        host = f"[{host}]"
    port = option(args, "--port") or str(DEFAULT_PORT[role])
    if os.environ.get("ATOLL_TLS_CERT_FILE"):  # the service serves HTTPS (service kit)
        return check_http(f"https://{host}:{port}/readyz", context=_tls_context())
    return check_http(f"http://{host}:{port}/readyz")


def _tls_context() -> ssl.SSLContext:
    """The service's certificate, checked against ATOLL_CA_FILE as its clients check it."""
    return ssl.create_default_context(cafile=os.environ.get("ATOLL_CA_FILE") or None)


def check_edge(args: Sequence[str]) -> tuple[bool, str]:
    config = option(args, "--config") or os.environ.get("ATOLL_EDGE_CONFIG")
    if not config:
        return False, "the agent was started without --config or ATOLL_EDGE_CONFIG"
    from atoll.edge.config import load_edge_settings
    from atoll.edge.identity import Identity
    from atoll.platform.bus.connection import Bus
    from atoll.platform.bus.keys import BusKeys
    from atoll.platform.core.errors import AtollError

    try:
        # The same file and environment as the agent, hence the same site and Redis.
        settings = load_edge_settings(Path(config))
        # its own Redis user, once enrolled
        identity = Identity(settings.name, settings.state_dir / "identity")
        url = identity.redis_url(settings.redis_url.get_secret_value())
        bus = Bus(url, BusKeys(settings.redis_prefix))
        try:
            beat = bus.beats([settings.name])[settings.name]
        finally:
            bus.close()
    except AtollError as e:
        return False, str(e)
    if beat is None:
        return False, f"site {settings.name}: no heartbeat in Redis within two intervals"
    return True, f"site {settings.name}: {beat.state}, heartbeat in Redis"


def check(args: Sequence[str] | None) -> tuple[bool, str]:
    if args is None:
        return True, "no atoll service runs here: nothing to probe"
    if args[0] == "edge":
        return check_edge(args)
    return check_service(args)


def main() -> int:
    try:
        healthy, why = check(find_service())
    except Exception as e:  # Docker reserves exit 2; any failure here means unhealthy
        healthy, why = False, f"the probe failed: {type(e).__name__}: {e}"
    print(why)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
