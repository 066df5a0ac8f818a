"""A site's end of its WAN links: the synchronous, thread-safe face of the link layer.

The training loop calls `send`, `receive`, `stats` and `close` from any thread; an
asyncio event loop on a background thread does all networking. Only `send` (when
that link's queue is full), `receive` with a timeout, `wait_connected` and `close`
ever wait, and each takes a timeout.
"""

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, serve

from atoll.platform.net.connector import Connector
from atoll.platform.net.errors import (
    ConnectTimeout,
    EndpointClosed,
    FlushTimeout,
    LinkError,
    UnknownPeer,
)
from atoll.platform.net.events import EndpointStats, Received
from atoll.platform.net.handshake import new_incarnation, secret_bytes
from atoll.platform.net.inbox import Inbox
from atoll.platform.net.link import PeerLink
from atoll.platform.net.options import LinkOptions
from atoll.platform.net.tls import TlsConfig
from atoll.platform.net.topology import LinkShape

_LEASE_CHECKS_PER_LEASE = 8
_STOP_TIMEOUT_S = 5.0


class SiteEndpoint:
    """One site's links to every other site in `directory` (site name -> ws:// or wss://
    URL). It listens where the directory puts it (or on `listen`) and dials the peers
    whose names sort after its own; `shapes` (peer -> LinkShape) shapes outgoing links.
    """

    def __init__(
        self,
        site: str,
        directory: Mapping[str, str],
        secret: str | bytes | None,
        *,
        listen: tuple[str, int] | None = None,
        shapes: Mapping[str, LinkShape] | None = None,
        tls: TlsConfig | None = None,
        options: LinkOptions | None = None,
    ) -> None:
        self.site = site
        self.options = options or LinkOptions()
        self.incarnation = new_incarnation()  # this process's; a restarted site gets a new one
        if secret is None and (tls is None or not tls.check_site_name):
            raise LinkError(
                "a link without a job secret needs TLS with per-site certificates "
                "(they authenticate the peer)"
            )
        # With per-site certificates TLS authenticates each peer; the handshake's proofs are
        # then keyed with nothing and only bind its transcript.
        self._secret = b"" if secret is None else secret_bytes(secret)
        self._tls = tls
        scheme = "wss" if tls else "ws"
        urls = {name: _check_url(name, url, scheme) for name, url in directory.items()}
        if listen is None:
            if site not in urls:
                raise LinkError(f"{site!r} is not in the directory and no listen address given")
            own = urlsplit(urls[site])
            listen = (own.hostname or "", own.port or 0)
        self.host, self.port = listen
        peers = sorted(name for name in urls if name != site)
        if not peers:
            raise LinkError(f"the directory names no site besides {site!r}")
        for name in shapes or {}:
            if name not in peers:
                raise UnknownPeer(f"a link shape for {name!r}, which is not in the directory")
        self._inbox = Inbox(self.options.inbox_bytes)
        self._state_changed = threading.Condition()
        self._links = {
            peer: PeerLink(
                site,
                peer,
                urls[peer],
                (shapes or {}).get(peer),
                self.options,
                self._inbox,
                self._notify_state_change,
            )
            for peer in peers
        }
        self._connector = Connector(
            site, self.incarnation, self._secret, self._links, tls, self.options
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._closed = False

    @property
    def peers(self) -> list[str]:
        return list(self._links)

    # lifecycle

    def start(self) -> "SiteEndpoint":
        """Listen and start dialing; returns once listening (raises LinkError if it cannot)."""
        if self._thread is not None:
            raise LinkError(f"endpoint {self.site!r} was already started")
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run_loop, args=(started,), name=f"atoll-net-{self.site}", daemon=True
        )
        self._thread.start()
        try:
            started.result()
        except BaseException:
            self._thread.join(_STOP_TIMEOUT_S)
            self._closed = True
            raise
        return self

    def close(self, flush_timeout_s: float = 5.0) -> None:
        """Stop accepting messages, give peers up to `flush_timeout_s` to acknowledge what
        was sent, then close every connection. Raises FlushTimeout (after closing) when
        some messages were never acknowledged. Received messages stay readable."""
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + flush_timeout_s
        for link in self._links.values():
            link.close_for_sending()
        unflushed = {
            peer: count
            for peer, link in self._links.items()
            if (count := link.wait_flushed(deadline)) > 0
        }
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(_STOP_TIMEOUT_S)
        if unflushed:
            raise FlushTimeout(
                f"{self.site}: closed with messages never acknowledged: "
                + ", ".join(f"{count} to {peer}" for peer, count in unflushed.items())
            )

    def __enter__(self) -> "SiteEndpoint":
        return self.start() if self._thread is None else self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is None:
            self.close()
        else:  # do not hide the exception that is already on its way out
            with contextlib.suppress(LinkError):
                self.close()

    # the application's side

    def send(
        self, peer: str, payload: bytes, timeout: float | None = None, *, urgent: bool = False
    ) -> None:
        """Queue `payload` for `peer`, delivered exactly once and in order, across dropped
        connections. Waits only while that link's queue is full: up to `timeout` seconds
        (None: as long as it takes; 0: not at all), then raises SendTimeout.

        An `urgent` message (small control messages) overtakes the queued messages not yet
        on the wire, as on a priority lane; urgent messages keep their order among themselves."""
        if self._closed or self._thread is None:
            state = "closed" if self._closed else "not started"
            raise EndpointClosed(f"endpoint {self.site!r} is {state}")
        self._link(peer).enqueue(bytes(payload), timeout, urgent)

    def receive(self, timeout: float | None = 0.0) -> Received | None:
        """The next `Message(peer, payload)` or link event, in arrival order; None if
        nothing came within `timeout` seconds (0: do not wait; None: wait for ever)."""
        return self._inbox.get(timeout)

    def receive_all(self) -> list[Received]:
        """Everything received so far, without waiting."""
        return self._inbox.get_all()

    def wait_connected(self, peers: Iterable[str] | None = None, timeout: float = 30.0) -> None:
        """Wait until the links to `peers` (default: all) are up; ConnectTimeout says why not."""
        links = [self._link(p) for p in peers] if peers is not None else list(self._links.values())
        deadline = time.monotonic() + timeout
        with self._state_changed:
            while down := [link for link in links if link.state != "up"]:
                if self._closed:
                    raise EndpointClosed(f"endpoint {self.site!r} is closed")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    reasons = "; ".join(
                        f"{link.peer}: {link.state}, {link.last_error or 'no answer yet'}"
                        for link in down
                    )
                    raise ConnectTimeout(f"{self.site}: links not up after {timeout} s: {reasons}")
                self._state_changed.wait(remaining)

    def stats(self) -> EndpointStats:
        return EndpointStats(
            site=self.site,
            links={peer: link.stats() for peer, link in self._links.items()},
            strangers_refused=self._connector.strangers_refused,
            stranger_bytes_received=self._connector.stranger_wire.received,
        )

    def _link(self, peer: str) -> PeerLink:
        try:
            return self._links[peer]
        except KeyError:
            raise UnknownPeer(f"{peer!r} is not a peer of {self.site!r}") from None

    def _notify_state_change(self) -> None:
        with self._state_changed:
            self._state_changed.notify_all()

    # the event loop thread

    def _run_loop(self, started: concurrent.futures.Future[None]) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve(started))
        finally:
            self._loop.close()

    async def _serve(self, started: concurrent.futures.Future[None]) -> None:
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._inbox.attach(loop)
        for link in self._links.values():
            link.attach(loop)
        try:
            server = await serve(
                self._connector.accept, self.host, self.port, **self._connector.server_options()
            )
        except OSError as e:
            started.set_exception(
                LinkError(f"{self.site} cannot listen on {self.host}:{self.port}: {e}")
            )
            return
        self.port = server.sockets[0].getsockname()[1]
        tasks = [
            asyncio.create_task(self._connector.dial_forever(link))
            for link in self._links.values()
            if link.dials
        ]
        tasks.append(asyncio.create_task(self._watch_leases()))
        started.set_result(None)
        await self._stopping.wait()
        await self._shut_down(server, tasks)

    async def _watch_leases(self) -> None:
        while True:
            await asyncio.sleep(self.options.lease_s / _LEASE_CHECKS_PER_LEASE)
            now = time.monotonic()
            for link in self._links.values():
                if self._inbox.full:
                    # we stopped reading, not they talking: do not blame the peers
                    link.last_heard = now
                elif link.state != "closed":
                    link.check_lease(now)

    async def _shut_down(self, server: Server, tasks: list[asyncio.Task[None]]) -> None:
        sessions = [link.session for link in self._links.values() if link.session is not None]
        for link in self._links.values():
            link.shut()
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_STOP_TIMEOUT_S):
                await server.wait_closed()


def _check_url(site: str, url: str, scheme: str) -> str:
    parts = urlsplit(url if "://" in url else f"{scheme}://{url}")
    if parts.scheme != scheme:
        raise LinkError(
            f"{site!r} is at {url!r}, but this endpoint "
            + ("uses TLS: wss://" if scheme == "wss" else "has no TLS config: ws://")
            + " URLs only"
        )
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise LinkError(f"{site!r} is at {url!r}: expected {scheme}://host:port")
    return parts.geturl()
