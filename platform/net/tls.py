"""TLS for site links: every site presents a certificate and checks the other's.

TLS keeps the bytes on the wire private and unaltered and, with `check_site_name`,
binds each end to a certificate issued for its site name. Whether a site belongs to
the job is still decided by the HMAC handshake over the job secret (handshake.py),
which runs inside TLS on every connection.
"""

import ssl
from dataclasses import dataclass
from pathlib import Path

from atoll.platform.net.errors import LinkError


@dataclass(frozen=True)
class TlsConfig:
    ca_file: Path  # the CA whose certificates this site accepts from its peers
    cert_file: Path  # this site's certificate chain (PEM)
    key_file: Path  # its private key (PEM)
    # Require the peer's certificate to be issued for the site name it claims (a DNS
    # subjectAltName equal to it) rather than for the host in its URL.
    check_site_name: bool = True

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._load(context)
        context.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: dialers present certificates too
        return context

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        self._load(context)
        return context

    def _load(self, context: ssl.SSLContext) -> None:
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_verify_locations(cafile=str(self.ca_file))
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        except (OSError, ssl.SSLError) as e:
            raise LinkError(f"cannot load TLS files ({self.cert_file}, {self.ca_file}): {e}") from e


def certificate_names(peercert: dict | None) -> set[str]:
    """The DNS names a verified peer certificate was issued for."""
    if not peercert:
        return set()
    return {value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS"}
