"""Opening connections: dialing with backoff, accepting, and each side's handshake.

Only authenticated connections reach a `PeerLink`. Everything that goes wrong on
a connection is sorted here into one `LinkError` kind, counted on the link it
claimed (or as a stranger), logged once per peer and kind, and answered by closing
the connection with a code that tells the other side why.
"""

import asyncio
import logging
import ssl
from typing import Any, TypeVar, cast

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidMessage

from atoll.platform.net.backoff import Backoff
from atoll.platform.net.errors import AuthenticationFailed, BadFrame, LinkError, PeerRefused
from atoll.platform.net.frames import (
    DATA_HEADER_BYTES,
    Challenge,
    Frame,
    Hello,
    Proof,
    Welcome,
    decode,
    encode,
)
from atoll.platform.net.handshake import Transcript, check_hello, new_nonce
from atoll.platform.net.link import PeerLink
from atoll.platform.net.options import LinkOptions
from atoll.platform.net.tls import TlsConfig
from atoll.platform.net.wire import (
    CountingClientConnection,
    CountingConnection,
    CountingServerConnection,
    WireCounter,
)

log = logging.getLogger("atoll.net")

# WebSocket close codes (private range) that say why a connection was turned away.
CLOSE_CODES: dict[type[LinkError], int] = {
    AuthenticationFailed: 4001,
    PeerRefused: 4002,
    BadFrame: 4003,
}
_CLOSE_REASON_BYTES = 120  # RFC 6455 leaves 123 bytes for the reason
# What a flaky or absent peer causes: retried quietly, shown in the link's `last_error`.
_NETWORK_FAILURES = (ConnectionClosed, InvalidHandshake, OSError, TimeoutError)
_OTHER_SECRET = "it has another job secret"
# Until the peer has proved itself it may send only handshake frames (a HELLO is at
# most 50 + 2 x 256 bytes), not make us buffer a message of max_message_bytes.
_HANDSHAKE_MESSAGE_BYTES = 1024

F = TypeVar("F", bound=Frame)


class Connector:
    def __init__(
        self,
        site: str,
        incarnation: bytes,
        secret: bytes,
        links: dict[str, PeerLink],
        tls: TlsConfig | None,
        options: LinkOptions,
    ) -> None:
        self.site = site
        self.incarnation = incarnation
        self.links = links
        self.tls = tls
        self.options = options
        self.strangers_refused = 0
        self.stranger_wire = WireCounter()  # bytes of connections that never authenticated
        self._secret = secret
        self._client_tls = tls.client_context() if tls else None
        self._warned: set[tuple[str, str]] = set()
        self._max_frame_bytes = options.max_message_bytes + DATA_HEADER_BYTES

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments for `websockets.asyncio.server.serve`."""
        return {
            "ssl": self.tls.server_context() if self.tls else None,
            "create_connection": CountingServerConnection,
            "server_header": None,
            "open_timeout": self.options.handshake_timeout_s,
            **self._common_options(),
        }

    def _common_options(self) -> dict[str, Any]:
        return {
            "compression": None,  # payloads are already compact; and bytes must be countable
            "ping_interval": None,  # heartbeats are ours, and go through link shaping
            "close_timeout": 1.0,
            "max_size": self._max_frame_bytes,
            "max_queue": 16,
        }

    # accepting

    async def accept(self, connection: ServerConnection) -> None:
        """Serve one incoming connection until it ends (the `serve` handler)."""
        ws = cast(CountingServerConnection, connection)  # what `server_options` makes
        link: PeerLink | None = None
        try:
            _limit_messages(ws, _HANDSHAKE_MESSAGE_BYTES)
            async with asyncio.timeout(self.options.handshake_timeout_s):
                hello = await _expect(ws, Hello, "the dialer")
                check_hello(hello, self.site, frozenset(self.links))
                link = self.links[hello.site]
                self._check_certificate(ws, hello.site)
                shaper = link.new_shaper()
                # check_hello made sure that the dialer named this site as its peer
                transcript = Transcript.of(hello, self.incarnation, new_nonce())
                challenge = Challenge(
                    self.incarnation,
                    transcript.acceptor_nonce,
                    transcript.proof(self._secret, "acceptor"),
                )
                await link.send_shaped(ws, shaper, encode(challenge))
                proof = await _expect(ws, Proof, hello.site)
                if not transcript.verify(self._secret, "dialer", proof.proof):
                    raise AuthenticationFailed(
                        f"{hello.site!r} failed the challenge: {_OTHER_SECRET}"
                    )
                ws.bind(link.wire)
                _limit_messages(ws, self._max_frame_bytes)
                if link.admitting:
                    raise PeerRefused(f"{hello.site!r} is already connecting")
                link.admitting = True  # until the session is in place: one at a time
                try:
                    await self._make_room(link)
                    received = link.begin_session(hello.incarnation)
                    await link.send_shaped(ws, shaper, encode(Welcome(received)))
                finally:
                    link.admitting = False
            # installs the session before its first await, so no other connection slips in
            await link.run_session(ws, shaper, proof.received_through)
        except Exception as exc:
            await self._failed(ws, link, exc)
        finally:
            if link is None or ws.wire is not link.wire:
                self.stranger_wire.add(ws.wire)

    def _check_certificate(self, ws: CountingConnection, site: str) -> None:
        if self.tls is not None:
            self.tls.check_peer(ws.transport.get_extra_info("ssl_object"), site)

    async def _make_room(self, link: PeerLink) -> None:
        """A second authenticated connection for a link that is up: keep the old one if it
        still answers (the newcomer is then a duplicate process), else replace it."""
        old = link.session
        if old is None:
            return
        if await old.responds(self.options.probe_timeout_s):
            raise PeerRefused(f"{link.peer!r} is already connected")
        old.abort()
        await old.ended()

    # dialing

    async def dial_forever(self, link: PeerLink) -> None:
        backoff = Backoff(self.options.backoff_initial_s, self.options.backoff_max_s)
        while not link.is_shut:
            await self._dial(link, backoff)
            if not link.is_shut:
                await asyncio.sleep(backoff.next_delay())

    async def _dial(self, link: PeerLink, backoff: Backoff) -> None:
        ws: CountingClientConnection | None = None
        try:
            # `_client_options` has websockets make a CountingClientConnection.
            ws = cast(
                CountingClientConnection,
                await connect(link.url, **self._client_options(link.peer)),
            )
            _limit_messages(ws, _HANDSHAKE_MESSAGE_BYTES)
            async with asyncio.timeout(self.options.handshake_timeout_s):
                shaper = link.new_shaper()
                nonce = new_nonce()
                self._check_certificate(ws, link.peer)
                hello = Hello(self.site, link.peer, self.incarnation, nonce)
                await link.send_shaped(ws, shaper, encode(hello))
                challenge = await _expect(ws, Challenge, link.peer)
                transcript = Transcript.of(hello, challenge.incarnation, challenge.nonce)
                if not transcript.verify(self._secret, "acceptor", challenge.proof):
                    raise AuthenticationFailed(
                        f"{link.peer!r} failed the challenge: {_OTHER_SECRET}"
                    )
                ws.bind(link.wire)
                _limit_messages(ws, self._max_frame_bytes)
                received = link.begin_session(challenge.incarnation)
                proof = Proof(transcript.proof(self._secret, "dialer"), received)
                await link.send_shaped(ws, shaper, encode(proof))
                welcome = await _expect(ws, Welcome, link.peer)
            backoff.reset()
            await link.run_session(ws, shaper, welcome.received_through)
        except Exception as exc:
            await self._failed(ws, link, exc)

    def _client_options(self, peer: str) -> dict[str, Any]:
        options: dict[str, Any] = {
            "create_connection": CountingClientConnection,
            "open_timeout": self.options.handshake_timeout_s,
            "proxy": None,  # a site link never goes through the machine's HTTP proxy
            "user_agent_header": None,
            **self._common_options(),
        }
        if self._client_tls is not None:
            options["ssl"] = self._client_tls
        return options

    # failures

    async def _failed(
        self, ws: CountingConnection | None, link: PeerLink | None, exc: Exception
    ) -> None:
        error = _as_link_error(exc, link.peer if link else "the peer")
        peer = link.peer if link is not None else None
        if link is not None:
            link.last_error = f"{type(error or exc).__name__}: {error or exc}"
            if error is None and self.tls is not None and isinstance(exc, InvalidMessage):
                # TLS 1.3 sends the acceptor's verdict on our certificate after our side
                # of the handshake is done; asyncio reports its alert as a plain EOF
                link.last_error += " (over TLS: it may have refused our certificate)"
        if error is None:
            if isinstance(exc, _NETWORK_FAILURES):
                log.debug("%s: connection to %s failed: %s", self.site, peer or _remote(ws), exc)
            else:
                log.exception("%s: unexpected failure on the link to %s", self.site, peer)
            if ws is not None and isinstance(exc, TimeoutError):
                await ws.close(CLOSE_CODES[PeerRefused], "handshake timed out")
            return
        if link is None:
            self.strangers_refused += 1
        elif isinstance(error, AuthenticationFailed):
            link.auth_failures += 1
        elif isinstance(error, PeerRefused):
            link.refused += 1
        elif isinstance(error, BadFrame):
            link.bad_frames += 1
        self._warn_once(peer or _remote(ws), error)
        if ws is not None:
            reason = str(error).encode()[:_CLOSE_REASON_BYTES].decode(errors="ignore")
            await ws.close(_close_code(error), reason)

    def _warn_once(self, who: str, error: LinkError) -> None:
        key = (who, type(error).__name__)
        if key in self._warned:
            log.debug("%s: %s: %s", self.site, who, error)
            return
        self._warned.add(key)
        log.warning("%s: no link with %s: %s", self.site, who, error)


async def _expect(ws: CountingConnection, kind: type[F], sender: str) -> F:
    try:
        raw = await ws.recv()
    except ConnectionClosed as closed:
        refusal = _refusal(closed, sender)
        if refusal is not None:
            raise refusal from closed
        raise
    frame = decode(raw)
    if not isinstance(frame, kind):
        raise BadFrame(f"expected {kind.__name__} from {sender}, got {type(frame).__name__}")
    return frame


def _refusal(closed: ConnectionClosed, sender: str) -> LinkError | None:
    """The reason the other side gave for turning us away, as one of our errors."""
    if closed.rcvd is None:
        return None
    for error, code in CLOSE_CODES.items():
        if closed.rcvd.code == code:
            return error(f"{sender} refused the connection: {closed.rcvd.reason}")
    return None


def _as_link_error(exc: BaseException, peer: str) -> LinkError | None:
    if isinstance(exc, LinkError):
        return exc
    if isinstance(exc, ConnectionClosed):
        return _refusal(exc, peer)
    cause: BaseException | None = exc
    while cause is not None:  # websockets wraps TLS failures of the opening handshake
        if isinstance(cause, ssl.SSLCertVerificationError):
            return AuthenticationFailed(f"TLS: {peer}'s certificate: {cause.verify_message}")
        if isinstance(cause, ssl.SSLError):
            return AuthenticationFailed(f"TLS: {peer} refused the handshake: {cause.reason}")
        cause = cause.__cause__ or cause.__context__
    return None


def _limit_messages(ws: CountingConnection, max_bytes: int) -> None:
    ws.protocol.max_message_size = max_bytes


def _close_code(error: LinkError) -> int:
    for kind, code in CLOSE_CODES.items():
        if isinstance(error, kind):
            return code
    return 1011  # an error of ours that is none of the above


def _remote(ws: CountingConnection | None) -> str:
    address = ws.remote_address if ws is not None else None
    return f"{address[0]}:{address[1]}" if address else "an unknown address"
