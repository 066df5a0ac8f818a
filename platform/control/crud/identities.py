"""Site identities: one-time enrolment tokens (stored as hashes) and the certificates the
CA signed; a revoked certificate stays listed, for the revocation list."""

from datetime import datetime

from cryptography import x509
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from atoll.platform.control.authority import Revoked
from atoll.platform.control.models import EnrolToken, SiteCertificate
from atoll.platform.service.security import hash_token, new_token


def issue_token(session: Session, site: str, now: datetime) -> str:
    """A new enrolment token for `site`; an unused earlier one stops working."""
    session.execute(delete(EnrolToken).where(EnrolToken.site == site))
    token = new_token()
    session.add(EnrolToken(site=site, token_hash=hash_token(token), issued_at=now))
    return token


def site_of_token(session: Session, token: str) -> str | None:
    """The site an unused token was issued for, or None."""
    found = session.scalar(select(EnrolToken).where(EnrolToken.token_hash == hash_token(token)))
    return found.site if found is not None else None


def use_token(session: Session, token: str) -> bool:
    """Spend a token: True for exactly one caller, even when two race with it."""
    result = session.execute(delete(EnrolToken).where(EnrolToken.token_hash == hash_token(token)))
    return bool(getattr(result, "rowcount", 0) == 1)


def record_certificate(
    session: Session, site: str, cert: x509.Certificate, redis_password_sha256: str, now: datetime
) -> None:
    session.add(
        SiteCertificate(
            serial=str(cert.serial_number),
            site=site,
            issued_at=now,
            not_after=cert.not_valid_after_utc,
            redis_password_sha256=redis_password_sha256,
        )
    )


def enrolled(session: Session) -> dict[str, str]:
    """Site -> its Redis password's hash, for every site with a certificate not revoked
    (the newest, when it enrolled again)."""
    rows = session.scalars(
        select(SiteCertificate)
        .where(SiteCertificate.revoked_at.is_(None))
        .order_by(SiteCertificate.issued_at)
    ).all()
    return {r.site: r.redis_password_sha256 for r in rows}


def revoke_site(session: Session, site: str, now: datetime) -> int:
    """Revoke every certificate of `site` and its unused token; returns how many certificates."""
    session.execute(delete(EnrolToken).where(EnrolToken.site == site))
    result = session.execute(
        update(SiteCertificate)
        .where(SiteCertificate.site == site, SiteCertificate.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    return int(getattr(result, "rowcount", 0))


def revoked(session: Session) -> list[Revoked]:
    rows = session.scalars(
        select(SiteCertificate).where(SiteCertificate.revoked_at.is_not(None))
    ).all()
    return [Revoked(int(r.serial), r.revoked_at) for r in rows if r.revoked_at is not None]
