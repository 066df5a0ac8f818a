"""`atoll registry`: serve the registry, migrate its database, manage site tokens."""

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from atoll.cli import service
from atoll.cli.sites import SiteArgument, TokenOption, UrlOption, client_for, resolve_site
from atoll.platform.core.errors import AtollError

app = typer.Typer(
    help="The registry service: serve it, migrate its database, manage site tokens.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # also run on its own, as `python -m atoll.registry`
)
REGISTRY = service.Service(
    database="the registry database",
    app="atoll.registry.main:create_app",
    settings="atoll.registry.core.config:registry_settings",
    schema="atoll.registry.migrate:SCHEMA",
)
token_app = typer.Typer(help="Site tokens: issue, list, revoke.", no_args_is_help=True)
app.add_typer(token_app, name="token")


@app.command("serve")
def serve(
    host: service.Host = "127.0.0.1",
    port: service.Port = 8700,
    workers: Annotated[int, typer.Option(min=1, help="Server processes.")] = 1,
    migrate: service.Migrate = False,
    log_level: service.Level = service.LogLevel.info,
    access_log: service.AccessLog = True,
) -> None:
    """Run the registry's HTTP API. Database from ATOLL_DATABASE_URL (default: a SQLite file
    under ATOLL_STATE_DIR); admin tokens from ATOLL_ADMIN_TOKEN."""
    service.serve(REGISTRY, host, port, migrate, log_level, access_log, workers)


service.add_migrate_command(app, REGISTRY)


@token_app.command("create")
def token_create(
    site: SiteArgument,
    revoke_others: Annotated[
        bool, typer.Option(help="Revoke the site's other tokens (rotation).")
    ] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Issue a new token for a site and print it (the registry never shows it again)."""
    with client_for(url, token) as client:
        site_id = resolve_site(client, site)
        created = client.create_token(site_id, revoke_others=revoke_others)
    Console(stderr=True).print(f"token {created.id} for site {site_id}; store it now:")
    print(created.token)


@token_app.command("revoke")
def token_revoke(
    site: SiteArgument,
    token_id: Annotated[str | None, typer.Argument(help="The token's id.")] = None,
    all_tokens: Annotated[
        bool, typer.Option("--all", help="Revoke every token of the site.")
    ] = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Revoke one token of a site, or all of them; takes effect at once."""
    if (token_id is None) == (not all_tokens):
        raise AtollError("name one TOKEN_ID or pass --all")
    with client_for(url, token) as client:
        site_id = resolve_site(client, site)
        ids = (
            [token_id]
            if token_id
            else [t.id for t in client.list_tokens(site_id).tokens if t.active]
        )
        for one in ids:
            client.revoke_token(site_id, one)
    print(f"revoked {len(ids)} token(s) of site {site_id}: {', '.join(ids) or 'none were active'}")


@token_app.command("list")
def token_list(
    site: SiteArgument,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """A site's tokens: id, first characters, when issued and revoked."""
    with client_for(url, token) as client:
        site_id = resolve_site(client, site)
        tokens = client.list_tokens(site_id).tokens
    table = Table(title=f"tokens of site {site_id}")
    for column in ("id", "starts with", "created", "revoked"):
        table.add_column(column)
    for t in tokens:
        revoked = t.revoked_at.isoformat(timespec="seconds") if t.revoked_at else "-"
        table.add_row(t.id, t.hint + "…", t.created_at.isoformat(timespec="seconds"), revoked)
    Console().print(table)
