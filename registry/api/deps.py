"""What routes depend on, as typed aliases: settings, database sessions, the caller."""

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from atoll.platform.service.database import Database
from atoll.platform.service.deps import token_digest
from atoll.platform.service.errors import Forbidden, Unauthorized
from atoll.platform.service.security import matches_any
from atoll.platform.service.sql import utcnow
from atoll.registry.core.batcher import Batcher, ShardedBatcher
from atoll.registry.core.config import RegistrySettings
from atoll.registry.core.tokencache import TokenCache
from atoll.registry.crud.neighbours import LiveSnapshot
from atoll.registry.crud.report_store import NewReport, Stored
from atoll.registry.crud.tokens import sites_of_tokens

# Declares the scheme in the OpenAPI schema; the token itself is checked below.
_bearer = HTTPBearer(auto_error=False, description="An admin token or a site's token.")


# The dependencies that do no I/O are `async def` (atoll.platform.service.deps says why).


async def get_settings(request: Request) -> RegistrySettings:
    return request.app.state.settings


async def now() -> datetime:
    return utcnow()


SettingsDep = Annotated[RegistrySettings, Depends(get_settings)]
Now = Annotated[datetime, Depends(now)]


@dataclass(frozen=True)
class Caller:
    """Who sent the request: an admin, or a site (by its id) holding one of its tokens."""

    site_id: str | None = None
    token_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.site_id is None

    def may_write(self, site_id: str) -> bool:
        return self.is_admin or self.site_id == site_id

    def ensure_may_write(self, site_id: str) -> None:
        """A site may change only its own records."""
        if not self.may_write(site_id):
            raise Forbidden(
                f"this token belongs to site {self.site_id}; it may not change site {site_id}",
                "site_id",
                "path",
            )


async def get_token_cache(request: Request) -> TokenCache:
    return request.app.state.token_cache


TokenCacheDep = Annotated[TokenCache, Depends(get_token_cache)]


async def get_snapshot(request: Request) -> LiveSnapshot | None:
    """The neighbour snapshot, or None when neighbour queries read the database."""
    snapshot: LiveSnapshot | None = request.app.state.snapshot
    return snapshot


SnapshotDep = Annotated[LiveSnapshot | None, Depends(get_snapshot)]
ReportWriter = ShardedBatcher[NewReport, Stored]


async def get_report_writer(request: Request) -> ReportWriter:
    writer: ReportWriter = request.app.state.report_writer
    return writer


ReportWriterDep = Annotated[ReportWriter, Depends(get_report_writer)]


TokenLookups = Batcher[str, tuple[str, str] | None]


async def get_token_lookups(request: Request) -> TokenLookups:
    lookups: TokenLookups = request.app.state.token_lookups
    return lookups


async def authenticate(
    request: Request,
    settings: SettingsDep,
    lookups: Annotated[TokenLookups, Depends(get_token_lookups)],
    cache: TokenCacheDep,
    _scheme: Annotated[object, Depends(_bearer)] = None,
) -> Caller:
    digest = token_digest(request)
    if matches_any(digest, settings.admin_token_hashes):
        return Caller()
    found = cache.get(digest)
    if found is None:
        epoch = cache.epoch
        found = await lookups.submit(digest)
        if found is None:
            raise Unauthorized("unknown or revoked token")
        cache.put(digest, *found, epoch)
    return Caller(site_id=found[0], token_id=found[1])


def look_up_tokens(database: Database, token_hashes: list[str]) -> list[tuple[str, str] | None]:
    """The token lookups batcher's work: the tokens that waited, in one query."""
    with database.reader.connect() as conn:
        return sites_of_tokens(conn, token_hashes)


async def require_admin(caller: Annotated[Caller, Depends(authenticate)]) -> Caller:
    if not caller.is_admin:
        raise Forbidden("this needs an admin token", "Authorization", "header")
    return caller


CallerDep = Annotated[Caller, Depends(authenticate)]
AdminDep = Annotated[Caller, Depends(require_admin)]
