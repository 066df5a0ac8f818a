"""Throwaway certificates for one job: a CA and one certificate per site.

For tests and local runs. Each site certificate names the site (a URI subjectAltName
`urn:atoll:site:NAME`, which `TlsConfig.check_site_name` checks, as on the certificates
the federation's CA signs at enrolment) and, so that it also passes an ordinary host
check on one machine, localhost and 127.0.0.1. It serves as
both server and client certificate, since sites both dial and accept.
"""

import datetime as dt
import ipaddress
import secrets
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from atoll.platform.core.files import write_private
from atoll.platform.net.tls import SITE_URI_PREFIX, TlsConfig

_LOCAL_NAMES = ("localhost",)
_LOCAL_ADDRESSES = ("127.0.0.1", "::1")


def write_job_certificates(
    out_dir: Path, sites: list[str] | tuple[str, ...], job: str = "atoll-job", days: int = 7
) -> dict[str, TlsConfig]:
    """Write `ca.pem` and `<site>.pem`/`<site>.key` for every site; returns their configs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    # a name of its own, so no verifier mistakes one throwaway CA for another
    ca_cert = ca_certificate(ca_key, f"{job} CA {secrets.token_hex(4)}", days)
    ca_file = out_dir / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    configs = {}
    for site in sites:
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [x509.UniformResourceIdentifier(SITE_URI_PREFIX + site)]
        names += [x509.DNSName(n) for n in _LOCAL_NAMES]
        names += [x509.IPAddress(ipaddress.ip_address(a)) for a in _LOCAL_ADDRESSES]
        cert = leaf_certificate(ca_cert, ca_key, key.public_key(), site, names, days)
        cert_file, key_file = out_dir / f"{site}.pem", out_dir / f"{site}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        write_private(key_file, private_pem(key))
        configs[site] = TlsConfig(ca_file, cert_file, key_file)
    return configs


def ca_certificate(key: ec.EllipticCurvePrivateKey, name: str, days: int) -> x509.Certificate:
    """A self-signed CA certificate that signs only end certificates (path length 0)."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    return (
        _builder(subject, subject, key.public_key(), now, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(key, hashes.SHA256())
    )


def leaf_certificate(
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    public_key: ec.EllipticCurvePublicKey,
    common_name: str,
    names: list[x509.GeneralName],
    days: int,
) -> x509.Certificate:
    """An end certificate for both ends of a TLS connection (server and client)."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    return (
        _builder(subject, ca_cert.subject, public_key, dt.datetime.now(dt.UTC), days)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )


def private_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: dt.datetime,
    days: int,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))  # tolerate clock skew between sites
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _key_usage(ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )
