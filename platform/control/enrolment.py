"""Enrolment and revocation of sites: tokens, the CA's signatures, the revocation list
on the bus, and each site's Redis user.

A site enrols once with the one-time token an operator gave it: it sends a CSR for the
key it made itself (which never leaves it) and gets its certificate, the CA, the
current revocation list and, when site users are on, its own Redis credentials. A
wrong or used token gets a 401 and creates nothing. Revoking a site revokes its
certificates (every peer then refuses it at the next handshake, from the revocation
list in Redis) and removes its Redis user.
"""

import logging
import threading
import time

from cryptography.hazmat.primitives.serialization import Encoding
from sqlalchemy.orm import Session

from atoll.platform.bus.connection import AccessRefused, Bus, BusDown
from atoll.platform.bus.messages import Command
from atoll.platform.control import access
from atoll.platform.control.authority import Authority, AuthorityError
from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.crud import identities
from atoll.platform.control.schemas import EnrolOut
from atoll.platform.service.database import Database
from atoll.platform.service.errors import ApiError, Invalid, Unauthorized
from atoll.platform.service.sql import utcnow

log = logging.getLogger("atoll.control")
BAD_TOKEN = (
    "the enrolment token is unknown or already used: ask the operator for a new one "
    "(`atoll sites token NAME`)"
)


class Unavailable(ApiError):
    status = 503


class Enrolment:
    def __init__(self, settings: ControlSettings, database: Database, bus: Bus) -> None:
        self.settings = settings
        self.database = database
        self.bus = bus
        self._lock = threading.Lock()  # one bus connection, shared by the API's threads
        self.authority: Authority | None = None
        if settings.ca_dir is not None:
            self.authority = Authority(settings.ca_dir)

    def _ca(self) -> Authority:
        if self.authority is None:
            raise Unavailable(
                "this control plane has no CA (ATOLL_CA_DIR; make one with `atoll ca init`)"
            )
        return self.authority

    def enrol(self, session: Session, token: str, csr: str, hosts: list[str]) -> EnrolOut:
        ca = self._ca()
        site = identities.site_of_token(session, token)
        if site is None:
            log.warning("refused an enrolment: %s", BAD_TOKEN.split(":", maxsplit=1)[0])
            raise Unauthorized(BAD_TOKEN)
        try:
            cert = ca.sign_site(site, csr, hosts)
        except AuthorityError as e:
            raise Invalid(str(e), "csr", "body") from e
        if not identities.use_token(session, token):  # another request spent it meanwhile
            raise Unauthorized(BAD_TOKEN)
        password, password_sha256 = access.new_redis_password()
        identities.record_certificate(session, site, cert, password_sha256, utcnow())
        user = None
        if self.settings.redis_site_users:
            try:
                with self._lock:
                    user = access.grant(self.bus, site, password_sha256)
            except (BusDown, AccessRefused) as e:
                raise Unavailable(f"cannot make the site's Redis user: {e}") from e
        crl = ca.crl(identities.revoked(session))
        session.commit()
        log.info("site %s enrolled (certificate %x)", site, cert.serial_number)
        return EnrolOut(
            site=site,
            certificate=cert.public_bytes(Encoding.PEM).decode(),
            ca=ca.cert_pem,
            crl=crl,
            command_key=ca.signer.public_pem(),
            redis_user=user,
            redis_password=password if user is not None else None,
        )

    def sign(self, command: Command) -> Command:
        """The command as it goes on the bus: signed now (an agent refuses it unsigned)."""
        if self.authority is None:
            return command
        return self.authority.signer.sign(command, time.time())

    def revoke(self, session: Session, site: str) -> int:
        count = identities.revoke_site(session, site, utcnow())
        session.commit()
        log.warning("site %s revoked (%d certificate(s))", site, count)
        self.restore()
        if self.settings.redis_site_users:
            with self._lock:
                access.withdraw(self.bus, site)
        return count

    def restore(self) -> None:
        """Put the revocation list and the sites' users into Redis (after a restart of it,
        which forgets both, and after each revocation)."""
        if self.authority is None:
            return
        with self.database.reading() as session:
            crl = self.authority.crl(identities.revoked(session))
            users = identities.enrolled(session)
        with self._lock:
            self.bus.publish_crl(crl)
            if self.settings.redis_site_users:
                access.grant_all(self.bus, users)
