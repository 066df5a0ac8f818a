"""Links over TLS: mutual certificates from a throwaway job CA; a certificate from
another CA, or issued for another site, gets no link."""

from pathlib import Path

import pytest
from integration.net.harness import Net

from atoll.platform.net import ConnectTimeout, LinkError, SiteEndpoint, TlsConfig
from atoll.platform.net.certs import write_job_certificates

pytestmark = pytest.mark.integration


def test_sites_exchange_messages_over_tls(net: Net, tmp_path: Path) -> None:
    certs = write_job_certificates(tmp_path, ["a", "b"])
    directory = net.directory("a", "b", scheme="wss")
    a = net.endpoint("a", directory, tls=certs["a"])
    b = net.endpoint("b", directory, tls=certs["b"])
    for i in range(500):
        a.send("b", i.to_bytes(4, "big"))
        b.send("a", i.to_bytes(4, "big"))
    for endpoint in (a, b):
        received, _ = net.messages(endpoint, 500)
        assert [int.from_bytes(m.payload, "big") for m in received] == list(range(500))
    assert a.stats().links["b"].auth_failures == 0


def refused(net: Net, a_tls: TlsConfig, b_tls: TlsConfig) -> str:
    """Start a and b (a dials b); returns why a's link to b never came up."""
    directory = net.directory("a", "b", scheme="wss")
    a = net.endpoint("a", directory, tls=a_tls)
    b = net.endpoint("b", directory, tls=b_tls)
    a.send("b", b"must not arrive")
    with pytest.raises(ConnectTimeout) as timeout:
        a.wait_connected(timeout=1.0)
    assert a.receive(timeout=0) is None
    assert b.receive(timeout=0) is None
    return str(timeout.value)


def test_a_certificate_from_another_ca_is_refused(net: Net, tmp_path: Path) -> None:
    ours = write_job_certificates(tmp_path / "job", ["a", "b"])
    theirs = write_job_certificates(tmp_path / "other", ["b"])
    error = refused(net, ours["a"], theirs["b"])
    # b sends its chain up to the other CA, which a does not trust
    assert "AuthenticationFailed: TLS: b's certificate: self-signed certificate in" in error


def test_a_certificate_for_another_site_is_refused(net: Net, tmp_path: Path) -> None:
    certs = write_job_certificates(tmp_path, ["a", "b", "c"])
    # b presents c's certificate: valid, same CA, but not b's
    error = refused(net, certs["a"], certs["c"])
    assert "AuthenticationFailed: a peer claiming to be 'b' has a certificate for ['c']" in error


def test_tls_endpoints_take_only_wss_urls(tmp_path: Path) -> None:
    certs = write_job_certificates(tmp_path, ["a"])
    directory = {"a": "ws://127.0.0.1:1", "b": "ws://127.0.0.1:2"}
    with pytest.raises(LinkError, match="uses TLS: wss://"):
        SiteEndpoint("a", directory, "x" * 32, tls=certs["a"])


def test_the_acceptor_refuses_a_dialer_certificate_from_another_ca(
    net: Net, tmp_path: Path
) -> None:
    ours = write_job_certificates(tmp_path / "job", ["a", "b"])
    theirs = write_job_certificates(tmp_path / "other", ["a"])
    a_tls = TlsConfig(ours["a"].ca_file, theirs["a"].cert_file, theirs["a"].key_file)
    # TLS 1.3: the refusal reaches a as a closed connection, not as an alert
    assert "it may have refused our certificate" in refused(net, a_tls, ours["b"])


def test_the_acceptor_refuses_a_dialer_certificate_for_another_site(
    net: Net, tmp_path: Path
) -> None:
    certs = write_job_certificates(tmp_path, ["a", "b", "c"])
    error = refused(net, certs["c"], certs["b"])
    assert (
        "AuthenticationFailed: b refused the connection: a peer claiming to be 'a' has a" in error
    )
