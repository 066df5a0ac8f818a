"""Site tokens: issued at registration and on rotation, stored only as hashes."""

import logging
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, bindparam, func, select, update
from sqlalchemy.orm import Session

from atoll.platform.service.database import Database
from atoll.platform.service.errors import NotFound
from atoll.platform.service.schemas import from_row
from atoll.platform.service.security import hash_token, new_token, new_token_id, token_hint
from atoll.registry.core.periodic import Periodic
from atoll.registry.core.tokencache import Revocations, TokenCache
from atoll.registry.models import Site, SiteToken
from atoll.registry.schemas import TokenInfo

_log = logging.getLogger(__name__)


def issue_token(session: Session, site_id: str, now: datetime) -> tuple[SiteToken, str]:
    """A new token for the site: its row (flushed with the session) and the token itself."""
    token = new_token()
    row = SiteToken(
        id=new_token_id(),
        site_id=site_id,
        token_hash=hash_token(token),
        hint=token_hint(token),
        created_at=now,
    )
    session.add(row)
    return row, token


# Built once: authenticated requests run it, and building costs more than running.
_ACTIVE_TOKENS = (
    select(SiteToken.token_hash, SiteToken.site_id, SiteToken.id)
    .join(Site, Site.id == SiteToken.site_id)
    .where(
        SiteToken.token_hash.in_(bindparam("token_hashes", expanding=True)),
        SiteToken.revoked_at.is_(None),
        Site.deregistered_at.is_(None),
    )
)


def sites_of_tokens(conn: Connection, token_hashes: Sequence[str]) -> list[tuple[str, str] | None]:
    """For each hash, (site id, token id) if it is an active token of a registered site,
    else None: the lookups of many requests in one query."""
    found = {
        row[0]: (row[1], row[2])
        for row in conn.execute(_ACTIVE_TOKENS, {"token_hashes": list(set(token_hashes))})
    }
    return [found.get(h) for h in token_hashes]


def list_tokens(session: Session, site_id: str) -> list[SiteToken]:
    return list(
        session.scalars(
            select(SiteToken)
            .where(SiteToken.site_id == site_id)
            .order_by(SiteToken.created_at, SiteToken.id)
        )
    )


def revoke_token(session: Session, site_id: str, token_id: str, now: datetime) -> SiteToken:
    row = session.get(SiteToken, token_id)
    if row is None or row.site_id != site_id:
        raise NotFound(f"site {site_id} has no token {token_id}", "token_id", "path")
    if row.revoked_at is None:
        row.revoked_at = now
    return row


def revoke_all(session: Session, site_id: str, now: datetime, keep: str | None = None) -> None:
    statement = update(SiteToken).where(
        SiteToken.site_id == site_id, SiteToken.revoked_at.is_(None)
    )
    if keep is not None:
        statement = statement.where(SiteToken.id != keep)
    session.execute(statement.values(revoked_at=now))


def token_info(row: SiteToken) -> TokenInfo:
    return from_row(TokenInfo, row, active=row.revoked_at is None)


# Two small tables' counts, once per ATOLL_AUTH_CACHE_S: a scan each, cheap next to a
# token lookup per request.
_REVOCATIONS = select(
    select(func.count()).where(SiteToken.revoked_at.is_not(None)).scalar_subquery(),
    select(func.count()).select_from(SiteToken).scalar_subquery(),
    select(func.count()).where(Site.deregistered_at.is_not(None)).scalar_subquery(),
    select(func.count()).select_from(Site).scalar_subquery(),
)


def revocations(conn: Connection) -> Revocations:
    row = conn.execute(_REVOCATIONS).one()
    return Revocations(*(int(n) for n in row))


class RevocationWatch:
    """Shows the token cache the database's `Revocations` every `interval_s`, in a thread
    of its own. When they cannot be read, the cache forgets everything: a token is
    trusted only while revocations are watched."""

    def __init__(self, database: Database, cache: TokenCache, interval_s: float) -> None:
        self.database, self.cache = database, cache
        self._watcher = Periodic("token-revocations", interval_s, self.check)

    def start(self) -> "RevocationWatch":
        self._watcher.start(first=self.check)
        return self

    def check(self) -> None:
        try:
            with self.database.reader.connect() as conn:
                self.cache.watch(revocations(conn))
        except Exception:
            _log.warning("reading token revocations failed: no cached token trusted", exc_info=True)
            self.cache.forget_all()

    def close(self) -> None:
        self._watcher.close()
