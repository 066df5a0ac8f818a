"""WAN links between sites: topology files, link shaping, transport.

A `SiteEndpoint` is one site's end of its links to every other site of a job. It
carries opaque payloads, exactly once and in order per link, across dropped
connections. It knows nothing about models.

    endpoint = SiteEndpoint("tokyo", directory, secret, shapes=outgoing_shapes(topo, "tokyo"))
    with endpoint:
        endpoint.send("virginia", payload)
        item = endpoint.receive(timeout=0.1)  # Message(peer, payload), a LinkEvent, or None

The protocol (frames.py): one WebSocket connection per pair of sites, binary
messages, opened by the site whose name sorts first, so a pair never opens two
connections at once and only one side redials. After the WebSocket upgrade the two
sites run a mutual HMAC-SHA256 challenge-response over the job secret (handshake.py)
that also exchanges each process's random incarnation and how far each has received.
Then DATA frames (sequence number + payload) and cumulative, batched ACK frames flow
both ways (sequencing.py); idle links send ACKs as heartbeats. A reconnect resumes
from what the receiver reported; a new incarnation means the peer restarted, and
both directions start over (`PeerRestarted`). An urgent message
(`send(..., urgent=True)`: the geo tier's clocks and selective-barrier notices) is
numbered ahead of the queued messages not yet transmitted, which the peer has never
seen: a priority lane without a second sequence.

Security: the HMAC handshake decides who belongs to the job; the secret never
crosses the wire. TLS (tls.py, optional, mutual) protects the bytes that follow
from being read or altered; use it on every link that leaves a machine.

Shaping (shaping.py): each outgoing link can be held to a `LinkShape`; frames are
serialised at its bandwidth and written to the socket one latency later, at the
sender, matching `LinkShape.transfer_s` and the simulator. Byte counters (wire.py)
count what is written to and read from the transport, WebSocket framing included.
`LinkStats.backlog_s` is the serialisation still ahead on a link, as the simulator
measures it.
"""

from atoll.platform.net.endpoint import SiteEndpoint
from atoll.platform.net.errors import (
    AuthenticationFailed,
    BadFrame,
    ConnectTimeout,
    EndpointClosed,
    FlushTimeout,
    LinkError,
    MessageTooLarge,
    PeerRefused,
    SendTimeout,
    UnknownPeer,
)
from atoll.platform.net.events import (
    EndpointStats,
    LinkEvent,
    LinkStats,
    Message,
    PeerConnected,
    PeerLost,
    PeerRestarted,
    Received,
)
from atoll.platform.net.handshake import new_job_secret
from atoll.platform.net.options import LinkOptions
from atoll.platform.net.shaping import outgoing_shapes
from atoll.platform.net.tls import TlsConfig
from atoll.platform.net.topology import LinkShape, Topology, load_topology

__all__ = [
    "AuthenticationFailed",
    "BadFrame",
    "ConnectTimeout",
    "EndpointClosed",
    "EndpointStats",
    "FlushTimeout",
    "LinkError",
    "LinkEvent",
    "LinkOptions",
    "LinkShape",
    "LinkStats",
    "Message",
    "MessageTooLarge",
    "PeerConnected",
    "PeerLost",
    "PeerRefused",
    "PeerRestarted",
    "Received",
    "SendTimeout",
    "SiteEndpoint",
    "TlsConfig",
    "Topology",
    "UnknownPeer",
    "load_topology",
    "new_job_secret",
    "outgoing_shapes",
]
