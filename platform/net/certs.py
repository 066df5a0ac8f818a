"""Throwaway certificates for one job: a CA and one certificate per site.

For tests and local runs. Each site certificate names the site (DNS subjectAltName
equal to the site name, which `TlsConfig.check_site_name` checks) and, so that it also
passes an ordinary host check on one machine, localhost and 127.0.0.1. It serves as
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

from atoll.platform.net.tls import TlsConfig

_LOCAL_NAMES = ("localhost",)
_LOCAL_ADDRESSES = ("127.0.0.1", "::1")


def write_job_certificates(
    out_dir: Path, sites: list[str] | tuple[str, ...], job: str = "atoll-job", days: int = 7
) -> dict[str, TlsConfig]:
    """Write `ca.pem` and `<site>.pem`/`<site>.key` for every site; returns their configs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    # a name of its own, so no verifier mistakes one throwaway CA for another
    ca_label = f"{job} CA {secrets.token_hex(4)}"
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_label)])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = out_dir / "ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    configs = {}
    for site in sites:
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [x509.DNSName(site)]
        names += [x509.DNSName(n) for n in _LOCAL_NAMES]
        names += [x509.IPAddress(ipaddress.ip_address(a)) for a in _LOCAL_ADDRESSES]
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, site)])
        cert = (
            _builder(subject, ca_name, key.public_key(), now, days)
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
        cert_file, key_file = out_dir / f"{site}.pem", out_dir / f"{site}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.touch(mode=0o600)
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        configs[site] = TlsConfig(ca_file, cert_file, key_file)
    return configs


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
