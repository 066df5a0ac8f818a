"""Helpers for the link-layer integration tests: real endpoints on loopback, and a TCP
proxy that can cut or freeze their connections. Tests import them as
`from integration.net.harness import ...`; the `net` fixture is in conftest.py."""

import contextlib
import dataclasses
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from atoll.platform.net import (
    FlushTimeout,
    LinkOptions,
    Message,
    Received,
    SiteEndpoint,
)
from atoll.platform.net.ports import free_loopback_port

SECRET = "integration-tests-job-secret-0123456789"
# Short leases and backoffs, so failures and recoveries take a second, not a minute.
FAST = LinkOptions(
    lease_s=2.0,
    backoff_initial_s=0.02,
    backoff_max_s=0.2,
    handshake_timeout_s=2.0,
    probe_timeout_s=0.3,
)


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Poll until `condition()` holds: links dial and refuse on their own threads."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not reached in {timeout} s: {what or condition}"
        time.sleep(0.02)


class TcpProxy:
    """Forwards one local port to another, byte for byte, on threads. `cut()` resets
    every connection through it (as a failing middlebox would); `freeze()` keeps them
    open but silent (a partition) until `thaw()`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thawed = threading.Event()
        self._thawed.set()
        self._closed = False
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> int:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                # linger 0: close with a TCP reset, in-flight bytes are lost
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
        return len(sockets) // 2

    def freeze(self) -> None:
        self._thawed.clear()

    def thaw(self) -> None:
        self._thawed.set()

    def close(self) -> None:
        self._closed = True
        self._thawed.set()
        self._listener.close()
        self.cut()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
                self.connections += 1
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                self._thawed.wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class Net:
    """Opens endpoints (closed at the end of the test) and reads what they receive."""

    def __init__(self) -> None:
        self.opened: list[SiteEndpoint] = []
        self.proxies: list[TcpProxy] = []

    @staticmethod
    def directory(*sites: str, scheme: str = "ws") -> dict[str, str]:
        return {site: f"{scheme}://127.0.0.1:{free_loopback_port()}" for site in sites}

    def endpoint(self, site: str, directory: dict[str, str], **kwargs: Any) -> SiteEndpoint:
        kwargs.setdefault("secret", SECRET)
        kwargs.setdefault("options", FAST)
        endpoint = SiteEndpoint(site, directory, **kwargs).start()
        self.opened.append(endpoint)
        return endpoint

    def proxy(self, target_port: int) -> TcpProxy:
        proxy = TcpProxy(target_port)
        self.proxies.append(proxy)
        return proxy

    @staticmethod
    def options_json(options: LinkOptions = FAST) -> str:
        return json.dumps(dataclasses.asdict(options))

    @staticmethod
    def messages(
        endpoint: SiteEndpoint, count: int, timeout: float = 20.0
    ) -> tuple[list[Message], list[Received]]:
        """Wait for `count` messages; returns them and the events seen meanwhile."""
        messages: list[Message] = []
        events: list[Received] = []
        deadline = time.monotonic() + timeout
        while len(messages) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"{endpoint.site}: {len(messages)} of {count} messages after {timeout} s; "
                    f"events {events}; stats {endpoint.stats()}"
                )
            item = endpoint.receive(timeout=remaining)
            if isinstance(item, Message):
                messages.append(item)
            elif item is not None:
                events.append(item)
        return messages, events

    @staticmethod
    def event(endpoint: SiteEndpoint, kind: type, timeout: float = 10.0) -> tuple[Any, list]:
        """Wait for the first event of `kind`; returns it and the messages before it."""
        before: list[Received] = []
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            item = endpoint.receive(timeout=remaining)
            if isinstance(item, kind):
                return item, before
            if item is not None:
                before.append(item)
        raise AssertionError(f"{endpoint.site}: no {kind.__name__} in {timeout} s: {before}")

    def close(self) -> None:
        for endpoint in self.opened:
            with contextlib.suppress(FlushTimeout):
                endpoint.close(flush_timeout_s=0)
        for proxy in self.proxies:
            proxy.close()
