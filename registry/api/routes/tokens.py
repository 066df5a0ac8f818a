"""/v1/sites/{id}/tokens: rotate and revoke a site's tokens (the site itself or an admin)."""

from typing import Annotated

from fastapi import APIRouter, Body, Path, status

from atoll.platform.service.deps import ReadSession, WriteSession
from atoll.registry.api.deps import CallerDep, Now, TokenCacheDep
from atoll.registry.api.routes import V1, SiteId, errors
from atoll.registry.crud import sites, tokens
from atoll.registry.schemas import TokenCreate, TokenCreated, TokenInfo, TokenList

router = APIRouter(prefix=V1 + "/sites/{site_id}/tokens", tags=["tokens"])
TokenId = Annotated[str, Path(max_length=32, pattern=r"^[0-9a-f]+$", description="from issue")]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=errors(403, 404, 409, 413),
    summary="Issue a new token for a site",
)
def create_token(
    site_id: SiteId,
    caller: CallerDep,
    session: WriteSession,
    now: Now,
    token_cache: TokenCacheDep,
    body: Annotated[TokenCreate | None, Body()] = None,
) -> TokenCreated:
    """The token is shown only in this answer. With `revoke_others`, every other token of the
    site stops working in the same step: a rotation."""
    caller.ensure_may_write(str(site_id))
    site = sites.registered_site(session, str(site_id))
    row, token = tokens.issue_token(session, site.id, now)
    session.flush()
    if body is not None and body.revoke_others:
        tokens.revoke_all(session, site.id, now, keep=row.id)
    session.commit()
    token_cache.forget_site(site.id)
    return TokenCreated(**tokens.token_info(row).model_dump(), token=token)


@router.get("", responses=errors(403, 404), summary="List a site's tokens (never the tokens)")
def list_tokens(site_id: SiteId, caller: CallerDep, session: ReadSession) -> TokenList:
    caller.ensure_may_write(str(site_id))
    sites.get_site(session, str(site_id))
    return TokenList(
        tokens=[tokens.token_info(t) for t in tokens.list_tokens(session, str(site_id))]
    )


@router.delete("/{token_id}", responses=errors(403, 404), summary="Revoke a token")
def revoke_token(
    site_id: SiteId,
    token_id: TokenId,
    caller: CallerDep,
    session: WriteSession,
    now: Now,
    token_cache: TokenCacheDep,
) -> TokenInfo:
    """Takes effect at once (on other server processes, within ATOLL_AUTH_CACHE_S).
    Revoking a revoked token is not an error."""
    caller.ensure_may_write(str(site_id))
    row = tokens.revoke_token(session, str(site_id), token_id, now)
    session.commit()
    token_cache.forget_site(str(site_id))
    return tokens.token_info(row)
