"""The site's identity: a key pair it makes itself, and the certificate the federation's
CA signed for it at enrolment. The private key never leaves this folder (mode 0600).

    identity/<site>.key      the site's private key (EC P-256; 0600)
    identity/<site>.pem      its certificate: urn:atoll:site:<site>
    identity/ca.pem          the federation's CA
    identity/crl.pem         the CA's revocation list, kept current from Redis
    identity/commands.pub    the control plane's key, which every command is signed with
    identity/redis.json      its own Redis user and password, when in use (0600)

The site's geo links use these files as they are (tls_dir); so does nothing else.
"""

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from atoll.platform.bus.signing import CommandVerifier
from atoll.platform.control.client import ControlClient
from atoll.platform.core.errors import AtollError
from atoll.platform.core.files import write_atomically, write_private
from atoll.platform.net.tls import certificate_sites

log = logging.getLogger("atoll.edge")


@dataclass(frozen=True)
class Identity:
    site: str
    folder: Path

    @property
    def key_file(self) -> Path:
        return self.folder / f"{self.site}.key"

    @property
    def cert_file(self) -> Path:
        # the name the geo tier looks for: <tls_dir>/<site>.pem and <site>.key
        return self.folder / f"{self.site}.pem"

    @property
    def ca_file(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def crl_file(self) -> Path:
        return self.folder / "crl.pem"

    @property
    def command_key_file(self) -> Path:
        return self.folder / "commands.pub"

    def command_verifier(self) -> CommandVerifier:
        return CommandVerifier.from_pem(self.command_key_file.read_bytes())

    @property
    def redis_file(self) -> Path:
        return self.folder / "redis.json"

    @property
    def enrolled(self) -> bool:
        files = (self.cert_file, self.ca_file, self.key_file, self.command_key_file)
        return all(f.is_file() for f in files)

    def redis_url(self, url: str) -> str:
        """`url` with this site's own Redis user in it, when it has one."""
        if not self.redis_file.is_file():
            return url
        creds = json.loads(self.redis_file.read_text())
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
        netloc = f"{quote(creds['user'], safe='')}:{quote(creds['password'], safe='')}@{host}"
        return urlunsplit(parts._replace(netloc=netloc))

    def save_crl(self, pem: str) -> bool:
        """Keep a newer revocation list; True when it changed."""
        if self.crl_file.is_file() and self.crl_file.read_text() == pem:
            return False
        write_atomically(self.crl_file, pem.encode())
        return True


def make_key_and_csr(identity: Identity) -> str:
    """The site's key (made once; kept) and a CSR for it, as PEM."""
    identity.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if identity.key_file.is_file():
        key = serialization.load_pem_private_key(identity.key_file.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise AtollError(f"{identity.key_file} is not an EC key")
    else:
        key = ec.generate_private_key(ec.SECP256R1())
        write_private(
            identity.key_file,
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
        )
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, identity.site)]))
        .sign(key, hashes.SHA256())
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode()


def store_enrolment(
    identity: Identity,
    certificate: str,
    ca: str,
    crl: str,
    command_key: str,
    redis_user: str | None,
    redis_password: str | None,
) -> None:
    """What enrolment answered; refuses a certificate for another site or another key."""
    cert = x509.load_pem_x509_certificate(certificate.encode())
    names = certificate_sites(
        {
            "subjectAltName": [
                ("URI", uri)
                for uri in cert.extensions.get_extension_for_class(
                    x509.SubjectAlternativeName
                ).value.get_values_for_type(x509.UniformResourceIdentifier)
            ]
        }
    )
    if identity.site not in names:
        raise AtollError(f"the CA issued a certificate for {sorted(names)}, not {identity.site!r}")
    key = serialization.load_pem_private_key(identity.key_file.read_bytes(), password=None)
    if cert.public_key() != key.public_key():
        raise AtollError("the CA's certificate is not for this site's key")
    write_atomically(identity.ca_file, ca.encode())
    write_atomically(identity.command_key_file, command_key.encode())
    identity.save_crl(crl)
    if redis_user is not None and redis_password is not None:
        write_private(
            identity.redis_file,
            json.dumps({"user": redis_user, "password": redis_password}).encode(),
        )
    write_atomically(identity.cert_file, certificate.encode())  # last: now it is enrolled


def enrol(identity: Identity, control_url: str | None, token: str | None, hosts: list[str]) -> None:
    """Enrol with the control plane unless enrolled already; a clear error when it cannot."""
    if identity.enrolled:
        return
    if not control_url or not token:
        raise AtollError(
            f"site {identity.site!r} has no certificate yet: give its agent ATOLL_CONTROL_URL "
            f"and ATOLL_ENROL_TOKEN (from `atoll sites token {identity.site}`) to enrol"
        )
    csr = make_key_and_csr(identity)
    with ControlClient(control_url, None) as client:
        answer = client.enrol(token, csr, hosts)
    if answer.site != identity.site:
        raise AtollError(
            f"the enrolment token is for site {answer.site!r}, but this agent is {identity.site!r}"
        )
    store_enrolment(
        identity, answer.certificate, answer.ca, answer.crl, answer.command_key,
        answer.redis_user, answer.redis_password,
    )  # fmt: skip
    log.info("site %s enrolled; its key stays in %s", identity.site, identity.folder)
