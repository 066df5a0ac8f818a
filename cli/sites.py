import json
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import typer
from rich.console import Console
from rich.table import Table

from atoll.platform.core.errors import AtollError

if TYPE_CHECKING:
    from atoll.registry.client import RegistryClient

app = typer.Typer(
    help="Sites: enrol (add, token) and revoke them at the control plane; list, inspect, "
    "register them in the registry, find their neighbours.",
    no_args_is_help=True,
)
ControlUrlOption = Annotated[
    str | None, typer.Option("--control-url", help="Control plane URL [env: ATOLL_CONTROL_URL].")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
SiteArgument = Annotated[str, typer.Argument(help="Site id or name.")]
UrlOption = Annotated[
    str | None, typer.Option("--url", help="Registry URL [env: ATOLL_REGISTRY_URL].")
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token", help="Bearer token [env: ATOLL_REGISTRY_TOKEN, else ATOLL_ADMIN_TOKEN]."
    ),
]


class Status(StrEnum):
    live = "live"
    stale = "stale"
    deregistered = "deregistered"


def client_for(url: str | None, token: str | None) -> "RegistryClient":
    from atoll.registry.client import RegistryClient

    return RegistryClient.from_env(url, token)


def resolve_site(client: "RegistryClient", ref: str) -> str:
    """A site id from an id or a registered site's name."""
    try:
        return str(UUID(ref))
    except ValueError:
        pass
    site = client.find_site(ref)
    if site is None:
        raise AtollError(f"no registered site is named {ref!r}")
    return str(site.id)


@app.command("list")
def list_sites(
    region: Annotated[str | None, typer.Option(help="Only this region.")] = None,
    status: Annotated[Status | None, typer.Option(help="Default: live and stale.")] = None,
    signature: Annotated[str | None, typer.Option(help="Only this model signature.")] = None,
    as_json: JsonOption = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Every site matching the filters, in name order."""
    filters = {
        "region": region,
        "status": status.value if status else None,
        "model_signature": signature,
    }
    with client_for(url, token) as client:
        sites = list(client.iter_sites(**filters))
    if as_json:
        print(json.dumps([s.model_dump(mode="json") for s in sites]))
        return
    table = Table(title=f"{len(sites)} site(s)")
    for column in (
        "name",
        "id",
        "region",
        "status",
        "last seen",
        "signature",
        "version",
        "reports",
    ):
        table.add_column(column, justify="right" if column == "reports" else "left")
    for s in sites:
        table.add_row(
            s.name,
            str(s.id),
            s.region,
            s.status,
            s.last_seen_at.isoformat(timespec="seconds"),
            s.model_signature or "-",
            s.model_version or "-",
            str(s.reports_total),
        )
    Console().print(table)


@app.command("show")
def show(
    site: SiteArgument,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """One site and its latest report, as JSON."""
    from atoll.registry.client import RegistryError

    with client_for(url, token) as client:
        found = client.get_site(resolve_site(client, site))
        try:
            latest = client.latest_report(found.id).model_dump(mode="json")
        except RegistryError as e:
            if e.status != 404:
                raise
            latest = None
    print(json.dumps({"site": found.model_dump(mode="json"), "latest_report": latest}, indent=2))


@app.command("neighbours")
def neighbours(
    site: SiteArgument,
    k: Annotated[int, typer.Option("-k", "--k", min=1, help="How many.")] = 5,
    as_json: JsonOption = False,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """A site's k nearest live neighbours by Jensen-Shannon divergence of class priors."""
    with client_for(url, token) as client:
        answer = client.neighbours(resolve_site(client, site), k)
    if as_json:
        print(answer.model_dump_json())
        return
    table = Table(
        title=f"neighbours of {site} ({answer.model_signature}; "
        f"{answer.candidates} live candidate(s))"
    )
    for column in ("#", "name", "id", "region", "divergence", "accuracy", "version"):
        table.add_column(
            column, justify="right" if column in {"#", "divergence", "accuracy"} else "left"
        )
    for i, n in enumerate(answer.neighbours, 1):
        accuracy = f"{n.accuracy:.3f}" if n.accuracy is not None else "-"
        table.add_row(
            str(i),
            n.name,
            str(n.site_id),
            n.region,
            f"{n.divergence:.4f}",
            accuracy,
            n.model_version or "-",
        )
    Console().print(table)


@app.command("register")
def register(
    name: Annotated[str, typer.Argument(help="Unique among registered sites.")],
    region: Annotated[str, typer.Option(help="Where the site is, e.g. eu-west-1.")],
    endpoint: Annotated[str | None, typer.Option(help="Where its edge agent listens.")] = None,
    label: Annotated[list[str] | None, typer.Option(help="KEY=VALUE; repeatable.")] = None,
    gpus: Annotated[int | None, typer.Option(min=0)] = None,
    workers: Annotated[int | None, typer.Option(min=0)] = None,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Register a site (admin token) and print its token, which is shown only now."""
    labels = {}
    for item in label or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise AtollError(f"--label {item!r}: expected KEY=VALUE")
        labels[key] = value
    capabilities = {k: v for k, v in {"gpus": gpus, "workers": workers}.items() if v is not None}
    with client_for(url, token) as client:
        created = client.register_site(name, region, endpoint, labels, capabilities)
    Console(stderr=True).print(
        f"registered {created.name} as {created.id}; its token (store it now):"
    )
    print(created.token)


@app.command("deregister")
def deregister(
    site: SiteArgument,
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Deregister a site: its tokens stop working, its history stays."""
    with client_for(url, token) as client:
        gone = client.deregister_site(resolve_site(client, site))
    print(f"deregistered {gone.name} ({gone.id})")


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The site's name (its agent's `name`).")],
    url: ControlUrlOption = None,
    token: TokenOption = None,
) -> None:
    """Declare a site at the control plane and print its one-time enrolment token (give it
    to the site's agent as ATOLL_ENROL_TOKEN; it is shown only now)."""
    issue_enrol_token(name, url, token)


@app.command("token")
def token_command(
    name: Annotated[str, typer.Argument(help="The site's name.")],
    url: ControlUrlOption = None,
    token: TokenOption = None,
) -> None:
    """A new one-time enrolment token for a site (an unused earlier one stops working):
    to enrol it again, e.g. after `atoll sites revoke` or a lost state volume."""
    issue_enrol_token(name, url, token)


@app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The site's name.")],
    url: ControlUrlOption = None,
    token: TokenOption = None,
) -> None:
    """Revoke a site: every peer refuses its certificate from its next handshake, and its
    Redis user is removed. It enrols again only with a new token."""
    from atoll.platform.control.client import ControlClient

    with ControlClient.from_env(url, token) as client:
        done = client.revoke(name)
    print(f"revoked {done.site}: {done.certificates} certificate(s)")


def issue_enrol_token(name: str, url: str | None, token: str | None) -> None:
    from atoll.platform.control.client import ControlClient

    with ControlClient.from_env(url, token) as client:
        issued = client.enrol_token(name)
    Console(stderr=True).print(f"enrolment token for {issued.site} (store it now; used once):")
    print(issued.token)
