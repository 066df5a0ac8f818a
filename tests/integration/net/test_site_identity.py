"""Geo links between sites that enrolled (each with its own key, its certificate from the
federation's CA): mutual TLS with no job secret; a peer only if its certificate names a
site of the job; a revoked site refused at its next handshake while the others go on.
Real endpoints on loopback, real TLS; each refusal is logged naming the site."""

import datetime as dt
import logging
from pathlib import Path

import pytest
from cryptography import x509
from integration.control.harness import enrol_offline
from integration.net.harness import Net, wait_until

from atoll.edge.identity import Identity
from atoll.platform.control.authority import Authority, Revoked
from atoll.platform.net import ConnectTimeout, TlsConfig

pytestmark = pytest.mark.integration


def tls(identity: Identity) -> TlsConfig:
    return TlsConfig(
        identity.ca_file, identity.cert_file, identity.key_file, crl_file=identity.crl_file
    )


def enrolled(tmp_path: Path, *sites: str) -> dict[str, Identity]:
    return {s: enrol_offline(tmp_path / "ca", tmp_path / s, s) for s in sites}


def test_enrolled_sites_link_with_their_own_certificates_and_no_job_secret(
    net: Net, tmp_path: Path
) -> None:
    ids = enrolled(tmp_path, "a", "b")
    directory = net.directory("a", "b", scheme="wss")
    a = net.endpoint("a", directory, secret=None, tls=tls(ids["a"]))
    b = net.endpoint("b", directory, secret=None, tls=tls(ids["b"]))
    a.send("b", b"hello")
    assert [m.payload for m in net.messages(b, 1)[0]] == [b"hello"]


def test_a_site_posing_as_another_or_not_of_the_job_is_refused_and_named(
    net: Net, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ids = enrolled(tmp_path, "a", "b", "x")
    caplog.set_level(logging.WARNING, "atoll.net")
    directory = net.directory("a", "b", scheme="wss")
    a = net.endpoint("a", directory, secret=None, tls=tls(ids["a"]))
    # x, a site of the federation but not of this job, dials b's port claiming to be a...
    impostor = net.endpoint("a", directory, secret=None, tls=tls(ids["x"]), listen=("127.0.0.1", 0))
    b = net.endpoint("b", directory, secret=None, tls=tls(ids["b"]))
    a.send("b", b"from a")
    assert [m.payload for m in net.messages(b, 1)[0]] == [b"from a"]
    assert impostor.stats().links["b"].state != "up"

    def impostor_refused() -> bool:
        return any(
            "no link with" in m and "a peer claiming to be 'a' has a certificate for ['x']" in m
            for m in (r.getMessage() for r in caplog.records)
        )

    # The impostor dials on its own thread; a busy host may deliver a's message first.
    wait_until(impostor_refused, timeout=20, what="the impostor's refusal logged")


def test_a_revoked_site_cannot_rejoin_while_the_others_go_on(
    net: Net, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ids = enrolled(tmp_path, "a", "b", "c")
    caplog.set_level(logging.WARNING, "atoll.net")
    directory = net.directory("a", "b", "c", scheme="wss")
    ends = {s: net.endpoint(s, directory, secret=None, tls=tls(ids[s])) for s in ids}
    for end in ends.values():
        end.wait_connected(timeout=20)
    # The operator revokes c (atoll sites revoke c); each agent writes the new list.
    authority = Authority(tmp_path / "ca")
    serial = x509.load_pem_x509_certificate(ids["c"].cert_file.read_bytes()).serial_number
    crl = authority.crl([Revoked(serial, dt.datetime.now(dt.UTC))])
    for identity in ids.values():
        identity.save_crl(crl)
    # c's process ends (as a revoked site's does once cut off) and comes back: refused.
    ends["c"].close(flush_timeout_s=0)
    again = net.endpoint("c", directory, secret=None, tls=tls(ids["c"]))
    with pytest.raises(ConnectTimeout):
        again.wait_connected(timeout=3)
    # a and b go on.
    for i in range(20):
        ends["a"].send("b", bytes([i]))
    assert len(net.messages(ends["b"], 20)[0]) == 20
    refusals = [r.getMessage() for r in caplog.records]
    assert any("'c' presented a revoked certificate" in m for m in refusals), refusals
