"""Only sites that know the job secret get a link; nothing else can inject a message,
and nothing a peer sends can crash an endpoint."""

import logging

import pytest
from integration.net.harness import SECRET, Net, wait_until
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from atoll.platform.net import ConnectTimeout, Message, PeerConnected
from atoll.platform.net.frames import Challenge, Data, Hello, Proof, Welcome, decode, encode
from atoll.platform.net.handshake import Transcript, new_incarnation, new_nonce, secret_bytes

pytestmark = pytest.mark.integration

WRONG_SECRETS = {"a": "not-the-job-secret-but-long-enough", "z": "another-wrong-secret-of-length"}


def raw_client(url: str) -> ClientConnection:
    return connect(url, compression=None, proxy=None, open_timeout=5)


def handshake_as(ws: ClientConnection, site: str, peer: str, incarnation: bytes) -> None:
    """Go through the dialer's side of the handshake by hand, with the right secret."""
    hello = Hello(site, peer, incarnation, new_nonce())
    ws.send(encode(hello))
    challenge = decode(ws.recv(timeout=5))
    assert isinstance(challenge, Challenge)
    transcript = Transcript.of(hello, challenge.incarnation, challenge.nonce)
    ws.send(encode(Proof(transcript.proof(secret_bytes(SECRET), "dialer"), 0)))


def close_code(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=5)
    return closed.value.rcvd.code if closed.value.rcvd else None


def test_strangers_with_the_wrong_secret_are_refused_both_ways(
    net: Net, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="atoll.net")
    directory = net.directory("a", "m", "z")
    m = net.endpoint("m", directory)
    # `a` dials m; m dials `z`: both directions of the handshake meet a stranger
    strangers = [net.endpoint(s, directory, secret=secret) for s, secret in WRONG_SECRETS.items()]
    for stranger in strangers:
        stranger.send("m", b"injected")
    wait_until(lambda: all(m.stats().links[s].auth_failures >= 3 for s in ("a", "z")))

    assert m.receive(timeout=0.3) is None  # not a message, not even PeerConnected
    for stranger in strangers:
        link = stranger.stats().links["m"]
        assert link.auth_failures >= 1
        assert link.connections == 0
        assert stranger.receive(timeout=0) is None
    with pytest.raises(ConnectTimeout, match="AuthenticationFailed"):
        m.wait_connected(timeout=0.1)
    # counted every time, logged once per peer
    warnings = [r.getMessage() for r in caplog.records]
    for stranger in ("a", "z"):
        assert sum(w.startswith(f"m: no link with {stranger}:") for w in warnings) == 1


def test_unknown_names_and_garbage_are_refused_and_the_endpoint_carries_on(net: Net) -> None:
    directory = net.directory("a", "m")
    m = net.endpoint("m", directory)
    url = directory["m"]

    with raw_client(url) as mallory:
        mallory.send(encode(Hello("mallory", "m", new_incarnation(), new_nonce())))
        assert close_code(mallory) == 4002  # refused: not in the directory
    for garbage in (b"\xff\x00garbage", b"", "a text message"):
        with raw_client(url) as ws:
            ws.send(garbage)
            assert close_code(ws) == 4003  # a bad frame
    assert m.stats().strangers_refused == 4

    a = net.endpoint("a", directory)
    a.send("m", b"still here")
    received, _ = net.messages(m, 1)
    assert received == [Message("a", b"still here")]


def test_a_peer_breaking_the_protocol_loses_only_that_connection(net: Net) -> None:
    directory = net.directory("a", "m")
    m = net.endpoint("m", directory)
    incarnation = new_incarnation()

    for bad in (b"\x07", encode(Data(seq=5, payload=b"a gap")), encode(Welcome(0))):
        with raw_client(directory["m"]) as ws:
            handshake_as(ws, "a", "m", incarnation)
            assert isinstance(decode(ws.recv(timeout=5)), Welcome)
            ws.send(bad)
            assert close_code(ws) == 4003
    assert m.stats().links["a"].bad_frames == 3

    with raw_client(directory["m"]) as ws:
        handshake_as(ws, "a", "m", incarnation)
        assert decode(ws.recv(timeout=5)) == Welcome(received_through=0)
        ws.send(encode(Data(seq=1, payload=b"well formed")))
        received, events = net.messages(m, 1)
    assert received == [Message("a", b"well formed")]
    assert events == [PeerConnected("a")]


def test_a_second_process_with_a_connected_name_is_refused(net: Net) -> None:
    directory = net.directory("a", "m")
    m, a = net.endpoint("m", directory), net.endpoint("a", directory)
    a.wait_connected(timeout=5)

    with raw_client(directory["m"]) as impostor:
        handshake_as(impostor, "a", "m", new_incarnation())
        assert close_code(impostor) == 4002  # the real `a` still answers: "already connected"
    assert m.stats().links["a"].refused == 1
    assert m.stats().links["a"].restarts == 0  # the impostor's incarnation changed nothing
    a.send("m", b"undisturbed")
    received, _ = net.messages(m, 1)
    assert received == [Message("a", b"undisturbed")]
