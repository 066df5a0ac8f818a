"""The one family of exceptions the WAN link layer raises.

Every failure a caller of `SiteEndpoint` can see is a `LinkError`. Failures on the
wire (a refused handshake, a bad frame) happen on the event loop thread: they close
that connection, are counted in the link's stats, and come back to the caller only
through `wait_connected` or `stats()`.
"""

from atoll.platform.core.errors import AtollError


class LinkError(AtollError):
    """A WAN link problem: misconfiguration, a refused peer, a broken protocol."""


class UnknownPeer(LinkError):
    """A site name that is not in the endpoint's directory."""


class MessageTooLarge(LinkError):
    """A payload larger than the link's `max_message_bytes`."""


class SendTimeout(LinkError):
    """The link's send queue stayed full for the whole timeout (backpressure)."""


class EndpointClosed(LinkError):
    """The endpoint was closed, or never started."""


class ConnectTimeout(LinkError):
    """Peers did not come up in time; the message says why for each."""


class FlushTimeout(LinkError):
    """`close` ran out of time before peers acknowledged everything sent to them."""


class AuthenticationFailed(LinkError):
    """The peer could not prove it knows the job secret, or its TLS certificate was refused."""


class PeerRefused(LinkError):
    """The peer is known and authentic but this connection is not wanted (wrong dialer,
    already connected, other protocol version)."""


class BadFrame(LinkError):
    """A peer broke the wire protocol: undecodable frame, impossible sequence number."""
