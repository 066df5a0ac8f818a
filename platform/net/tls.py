"""TLS for site links: every site presents a certificate and checks the other's.

TLS keeps the bytes on the wire private and unaltered and, with `check_site_name`,
binds each end to a certificate issued for its site name (a URI subjectAltName
`urn:atoll:site:NAME`). A site accepts a peer only when that name is a site of the
same job (the endpoint's directory) and its certificate is not on the CA's revocation
list (`crl_file`, read again whenever it changes, so a revocation counts from the next
handshake on). With per-site certificates there is no job secret at all; the local
launcher's throwaway certificates add one (handshake.py).
"""

import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from atoll.platform.net.errors import AuthenticationFailed, LinkError

SITE_URI_PREFIX = "urn:atoll:site:"


class _Revocations:
    """The CRL's serials, parsed again only when its file changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        self._serials: frozenset[int] = frozenset()

    def serials(self, crl_file: Path, ca_file: Path) -> frozenset[int]:
        try:
            stat = crl_file.stat()
        except OSError as e:
            raise AuthenticationFailed(f"no revocation list at {crl_file}: {e}") from e
        with self._lock:
            if self._seen != (stat.st_mtime_ns, stat.st_size):
                self._serials = revoked_serials(crl_file.read_bytes(), ca_file.read_bytes())
                self._seen = (stat.st_mtime_ns, stat.st_size)
            return self._serials


@dataclass(frozen=True)
class TlsConfig:
    ca_file: Path  # the CA whose certificates this site accepts from its peers
    cert_file: Path  # this site's certificate chain (PEM)
    key_file: Path  # its private key (PEM)
    # Require the peer's certificate to be issued for the site name it claims (a DNS
    # subjectAltName equal to it) rather than for the host in its URL.
    check_site_name: bool = True
    # The CA's revocation list (PEM). When set it must exist: a site that cannot tell
    # whether a peer is revoked refuses it.
    crl_file: Path | None = None
    _revocations: _Revocations = field(
        default_factory=_Revocations, init=False, compare=False, repr=False
    )

    @classmethod
    def for_site(cls, folder: Path, site: str, crl_file: Path | None) -> "TlsConfig":
        """A site's identity as its agent keeps it: ca.pem, <site>.pem, <site>.key."""
        key, cert = folder / f"{site}.key", folder / f"{site}.pem"
        return cls(folder / "ca.pem", cert, key, crl_file=crl_file)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._load(context)
        context.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: dialers present certificates too
        return context

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        self._load(context)
        if self.check_site_name:
            # The peer is checked by site name (check_peer), not by the host it is at.
            context.check_hostname = False
        return context

    def check_peer(self, ssl_object: object, site: str) -> None:
        """After the TLS handshake: the peer's certificate names `site` and is not revoked.
        Raises AuthenticationFailed saying which."""
        getpeercert = getattr(ssl_object, "getpeercert", None)
        if getpeercert is None:
            raise AuthenticationFailed(f"a peer claiming to be {site!r} presented no certificate")
        if self.check_site_name:
            names = certificate_sites(getpeercert())
            if site not in names:
                raise AuthenticationFailed(
                    f"a peer claiming to be {site!r} has a certificate for {sorted(names)}"
                )
        if self.crl_file is not None:
            der = getpeercert(binary_form=True)
            serial = x509.load_der_x509_certificate(der).serial_number
            if serial in self._revocations.serials(self.crl_file, self.ca_file):
                raise AuthenticationFailed(f"{site!r} presented a revoked certificate")

    def _load(self, context: ssl.SSLContext) -> None:
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_verify_locations(cafile=str(self.ca_file))
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        except (OSError, ssl.SSLError) as e:
            raise LinkError(f"cannot load TLS files ({self.cert_file}, {self.ca_file}): {e}") from e


def certificate_sites(peercert: dict | None) -> set[str]:
    """The site names (`urn:atoll:site:NAME`) a verified peer certificate was issued for."""
    if not peercert:
        return set()
    return {
        value.removeprefix(SITE_URI_PREFIX)
        for kind, value in peercert.get("subjectAltName", ())
        if kind == "URI" and value.startswith(SITE_URI_PREFIX)
    }


def revoked_serials(crl_pem: bytes, ca_pem: bytes) -> frozenset[int]:
    """The serial numbers a CRL revokes, once its signature checks against the CA."""
    try:
        crl = x509.load_pem_x509_crl(crl_pem)
        ca_key = x509.load_pem_x509_certificate(ca_pem).public_key()
    except ValueError as e:
        raise AuthenticationFailed(f"the revocation list cannot be read: {e}") from e
    if not isinstance(ca_key, ec.EllipticCurvePublicKey) or not crl.is_signature_valid(ca_key):
        raise AuthenticationFailed("the revocation list is not signed by the CA")
    return frozenset(r.serial_number for r in crl)
