import ssl
from pathlib import Path

import pytest
from cryptography import x509

from atoll.platform.net.certs import write_job_certificates
from atoll.platform.net.errors import LinkError
from atoll.platform.net.tls import SITE_URI_PREFIX, TlsConfig, certificate_sites


def test_each_site_gets_a_certificate_for_its_name_signed_by_the_job_ca(tmp_path: Path) -> None:
    configs = write_job_certificates(tmp_path, ["virginia", "tokyo"])
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.pem").read_bytes())
    for site, config in configs.items():
        cert = x509.load_pem_x509_certificate(config.cert_file.read_bytes())
        cert.verify_directly_issued_by(ca)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert SITE_URI_PREFIX + site in names.get_values_for_type(x509.UniformResourceIdentifier)
        assert config.key_file.stat().st_mode & 0o077 == 0  # the key is private
        assert config.server_context().verify_mode == ssl.CERT_REQUIRED
        # peers are checked by the site their certificate names, not by host
        assert not config.client_context().check_hostname


def test_two_jobs_never_share_a_ca(tmp_path: Path) -> None:
    one = write_job_certificates(tmp_path / "1", ["a"])["a"].ca_file.read_bytes()
    two = write_job_certificates(tmp_path / "2", ["a"])["a"].ca_file.read_bytes()
    assert (
        x509.load_pem_x509_certificate(one).subject != x509.load_pem_x509_certificate(two).subject
    )


def test_missing_files_are_a_clear_error(tmp_path: Path) -> None:
    config = TlsConfig(tmp_path / "ca.pem", tmp_path / "a.pem", tmp_path / "a.key")
    with pytest.raises(LinkError, match="cannot load TLS files"):
        config.client_context()


def test_certificate_sites_reads_atoll_site_uris_only() -> None:
    peercert = {
        "subjectAltName": (
            ("DNS", "osaka"),
            ("URI", "urn:atoll:site:tokyo"),
            ("URI", "https://example.org/"),
            ("IP Address", "127.0.0.1"),
        )
    }
    assert certificate_sites(peercert) == {"tokyo"}
    assert certificate_sites(None) == set()
