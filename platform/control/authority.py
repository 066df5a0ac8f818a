"""The federation's certificate authority: it signs each site's own key (sent as a
certificate signing request at enrolment) and publishes the list of revoked ones.

It also holds the control plane's command signing key (`commands.key`, Ed25519), whose
public half each site gets at enrolment. Its keys stay in its folder (mode 0600):
`atoll ca init DIR` makes one, or an operator puts the certificate and key of a CA of
their own there (`ca.pem`, `ca.key`; EC P-256; `commands.key` is then made beside them).
A site certificate names the site in a URI subjectAltName, `urn:atoll:site:NAME`, which
geo links check against the name the peer claims.

Revocation is by a certificate revocation list (CRL), not by short-lived certificates:
a CRL takes effect at the next handshake, everywhere, without every site having to
reach the control plane every few hours to renew (a site cut off from it would
otherwise drop out of its jobs when its certificate lapsed, though its peers still
reach it), and it needs no clock agreement tighter than the CRL's own validity.
"""

import datetime as dt
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from atoll.platform.bus.signing import CommandSigner, new_signing_key
from atoll.platform.core.errors import AtollError
from atoll.platform.core.files import write_private
from atoll.platform.net.certs import ca_certificate, leaf_certificate, private_pem
from atoll.platform.net.tls import SITE_URI_PREFIX

CA_CERT = "ca.pem"
CA_KEY = "ca.key"
COMMAND_KEY = "commands.key"  # Ed25519: signs every command (platform/bus/signing.py)
SITE_DAYS = 365
CRL_DAYS = 7  # a CRL is published again on every change and at least this often


class AuthorityError(AtollError):
    """The CA cannot do what was asked (missing files, a bad request)."""


@dataclass(frozen=True)
class Revoked:
    serial: int
    at: dt.datetime


def init_authority(folder: Path, name: str = "Atoll federation CA", days: int = 3650) -> Path:
    """Make a new CA in `folder`; refuses to replace one that is there."""
    cert_file, key_file = folder / CA_CERT, folder / CA_KEY
    if cert_file.exists() or key_file.exists():
        raise AuthorityError(f"{folder} already holds a CA; remove it first to make a new one")
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = ca_certificate(key, f"{name} {secrets.token_hex(4)}", days)
    write_private(key_file, private_pem(key))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_file


class Authority:
    """A CA loaded from its folder."""

    def __init__(self, folder: Path) -> None:
        cert_file, key_file = folder / CA_CERT, folder / CA_KEY
        if not cert_file.is_file() or not key_file.is_file():
            raise AuthorityError(
                f"no CA in {folder} (expected {CA_CERT} and {CA_KEY}); make one with "
                f"`atoll ca init {folder}` or put your own CA's there"
            )
        self.cert = x509.load_pem_x509_certificate(cert_file.read_bytes())
        key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise AuthorityError(f"{key_file}: only an EC (P-256) CA key is supported")
        self.key = key
        command_key = folder / COMMAND_KEY
        if not command_key.is_file():  # an operator's CA comes without one: make it here
            write_private(command_key, new_signing_key())
        self.signer = CommandSigner.from_pem(command_key.read_bytes())

    @property
    def cert_pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def sign_site(
        self, site: str, csr_pem: str, hosts: list[str] | None = None
    ) -> x509.Certificate:
        """A certificate for `site`'s own key, from its CSR. The CSR's subject is ignored:
        the site's name is the one its enrolment token was issued for."""
        try:
            csr = x509.load_pem_x509_csr(csr_pem.encode())
        except ValueError as e:
            raise AuthorityError(f"the certificate request is not a PEM CSR: {e}") from e
        if not csr.is_signature_valid:
            raise AuthorityError("the certificate request's signature is not valid")
        public_key = csr.public_key()
        if not isinstance(public_key, ec.EllipticCurvePublicKey):
            raise AuthorityError("the certificate request must be for an EC (P-256) key")
        names = [x509.UniformResourceIdentifier(SITE_URI_PREFIX + site), *host_names(hosts or [])]
        return leaf_certificate(self.cert, self.key, public_key, site, names, SITE_DAYS)

    def server_certificate(
        self, hosts: list[str], days: int = 365
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        """A TLS certificate and a new key for a service reached at `hosts`."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = leaf_certificate(
            self.cert, self.key, key.public_key(), hosts[0], host_names(hosts), days
        )
        return cert, key

    def crl(self, revoked: list[Revoked]) -> str:
        """The revocation list, signed, as PEM."""
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateRevocationListBuilder()
            .issuer_name(self.cert.subject)
            .last_update(now - dt.timedelta(minutes=5))
            .next_update(now + dt.timedelta(days=CRL_DAYS))
        )
        for entry in revoked:
            builder = builder.add_revoked_certificate(
                x509.RevokedCertificateBuilder()
                .serial_number(entry.serial)
                .revocation_date(entry.at)
                .build()
            )
        crl = builder.sign(self.key, hashes.SHA256())
        return crl.public_bytes(serialization.Encoding.PEM).decode()


def issue_server_certificate(
    folder: Path, hosts: list[str], out_cert: Path, out_key: Path, days: int = 365
) -> None:
    """Write a service's TLS certificate and key (0600), signed by the CA in `folder`."""
    if not hosts:
        raise AuthorityError("name at least one host the service is reached at")
    cert, key = Authority(folder).server_certificate(hosts, days)
    out_key.parent.mkdir(parents=True, exist_ok=True)
    write_private(out_key, private_pem(key))
    out_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def host_names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names
