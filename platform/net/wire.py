"""Byte counting where bytes meet the transport.

The WebSocket connections below count every byte they hand to the transport and
every byte the transport hands them: our frames, WebSocket framing and the HTTP
upgrade. With TLS the transport encrypts afterwards, so TLS records (about 30
bytes each) and the TLS handshake are not included.

A connection counts into its own `WireCounter` until the handshake says which peer
it belongs to; then it is re-pointed at that link's counter (see `bind`).
"""

import asyncio
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.server import ServerConnection


@dataclass
class WireCounter:
    sent: int = 0
    received: int = 0

    def add(self, other: "WireCounter") -> None:
        self.sent += other.sent
        self.received += other.received


class _CountingTransport:
    """The connection's transport, with writes counted; everything else passes through."""

    def __init__(self, transport: asyncio.Transport, owner: "CountingMixin") -> None:
        self._transport = transport
        self._owner = owner

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._owner.wire.sent += len(data)
        self._transport.write(data)

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CountingMixin:
    wire: WireCounter

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.wire = WireCounter()
        super().connection_made(_CountingTransport(transport, self))  # type: ignore[misc, arg-type]

    def data_received(self, data: bytes) -> None:
        self.wire.received += len(data)
        super().data_received(data)  # type: ignore[misc]

    def bind(self, counter: WireCounter) -> None:
        """From now on count into `counter`, which also takes what was counted so far."""
        counter.add(self.wire)
        self.wire = counter


class CountingClientConnection(CountingMixin, ClientConnection):
    pass


class CountingServerConnection(CountingMixin, ServerConnection):
    pass


CountingConnection = CountingClientConnection | CountingServerConnection
