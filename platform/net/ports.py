"""A free port on loopback for a listener that binds it later (a local deployment's
services, a site's geo endpoint).

Picked below the kernel's ephemeral range: the range the kernel hands outgoing connections
is where a port picked by binding port 0 comes from, so any connection opened between the
pick and the bind (another test's, another site's) could take it first.
"""

import random
import socket
from pathlib import Path

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # clear of the well-known and most registered service ports
_TRIES = 50


def free_loopback_port() -> int:
    low = _ephemeral_low()
    for _ in range(_TRIES if low > _LOWEST + 1_000 else 0):
        port = random.randrange(_LOWEST, low)
        if _bindable(port):
            return port
    with socket.socket() as s:  # no room below the range: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    try:
        return int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
