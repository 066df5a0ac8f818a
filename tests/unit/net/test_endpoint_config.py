"""What SiteEndpoint refuses before it opens a single socket."""

import pytest

from atoll.platform.net import LinkError, LinkShape, SiteEndpoint, UnknownPeer
from atoll.platform.net.errors import EndpointClosed

SECRET = "unit-test-secret-0123456789"
DIRECTORY = {"a": "ws://127.0.0.1:7001", "b": "ws://127.0.0.1:7002", "c": "127.0.0.1:7003"}


def test_peers_are_everyone_else_and_the_smaller_names_dial() -> None:
    endpoint = SiteEndpoint("b", DIRECTORY, SECRET)
    assert endpoint.peers == ["a", "c"]
    assert (endpoint.host, endpoint.port) == ("127.0.0.1", 7002)


@pytest.mark.parametrize(
    ("site", "directory", "problem"),
    [
        ("z", DIRECTORY, "'z' is not in the directory and no listen address"),
        ("a", {"a": "ws://127.0.0.1:1"}, "names no site besides 'a'"),
        ("a", {**DIRECTORY, "b": "http://127.0.0.1:1"}, "has no TLS config: ws://"),
        ("a", {**DIRECTORY, "b": "ws://127.0.0.1"}, "expected ws://host:port"),
        ("a", {**DIRECTORY, "b": "ws://127.0.0.1:port"}, "expected ws://host:port"),
    ],
)
def test_bad_directories_are_refused(site: str, directory: dict, problem: str) -> None:
    with pytest.raises(LinkError, match=problem):
        SiteEndpoint(site, directory, SECRET)


def test_shapes_must_name_peers() -> None:
    with pytest.raises(UnknownPeer, match="'q'"):
        SiteEndpoint("a", DIRECTORY, SECRET, shapes={"q": LinkShape(0.01, 1e6)})


def test_nothing_can_be_sent_before_start() -> None:
    with pytest.raises(EndpointClosed):
        SiteEndpoint("a", DIRECTORY, SECRET).send("b", b"x")


def test_a_port_in_use_is_a_clear_error() -> None:
    first = SiteEndpoint("a", DIRECTORY, SECRET, listen=("127.0.0.1", 0)).start()
    try:
        taken = {**DIRECTORY, "a": f"ws://127.0.0.1:{first.port}"}
        with pytest.raises(LinkError, match=r"cannot listen on 127\.0\.0\.1"):
            SiteEndpoint("a", taken, SECRET).start()
    finally:
        first.close(flush_timeout_s=0)
