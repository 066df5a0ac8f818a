"""The command line: `atoll registry serve|migrate|token`, `atoll sites ...`."""

import json
import shutil
import sys
from pathlib import Path

import httpx
import pytest
from integration.registry.service import ADMIN, PRIORS, Registry
from typer.testing import CliRunner

from atoll.cli.registry import app as registry_app
from atoll.cli.sites import app as sites_app
from atoll.localstack.registry import ServerProcess, scratch_database
from atoll.platform.core.errors import AtollError

pytestmark = pytest.mark.integration
runner = CliRunner()


def atoll(registry: Registry, app: object, *args: str, token: str = ADMIN) -> str:
    result = runner.invoke(
        app,  # type: ignore[arg-type]
        list(args),
        env={"ATOLL_REGISTRY_URL": registry.url, "ATOLL_REGISTRY_TOKEN": token},
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.stdout


def test_atoll_registry_serve_is_the_service(tmp_path: Path) -> None:
    # Once, on SQLite: the command is the same on every backend, and every other test
    # runs it (as `python -m atoll.registry serve`) on each of them.
    atoll_command = shutil.which("atoll", path=str(Path(sys.executable).parent))
    assert atoll_command is not None, "the atoll console script is not installed"
    with scratch_database(tmp_path) as url:
        server = ServerProcess(url, ADMIN, tmp_path / "log", command=[atoll_command, "registry"])
        with server:
            assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
            sites = httpx.get(
                f"{server.url}/v1/sites", headers={"Authorization": f"Bearer {ADMIN}"}
            )
            assert sites.json() == {"sites": [], "next_cursor": None}


def test_sites_register_list_show_and_neighbours(registry: Registry) -> None:
    token = atoll(
        registry,
        sites_app,
        "register",
        "lab-a",
        "--region",
        "eu-west-1",
        "--gpus",
        "2",
        "--label",
        "tier=lab",
    ).strip()
    assert token.startswith("atoll_")
    lab_a = registry.admin.find_site("lab-a")
    assert lab_a is not None
    assert lab_a.labels == {"tier": "lab"}
    assert lab_a.capabilities.gpus == 2
    registry.client(token).report(lab_a.id, [9, 1], 0.9, 10, "sha256:cafe01", "1")
    near, _ = registry.site("lab-b", priors=[8, 2])
    registry.site("lab-c", priors=[1, 9])

    listed = json.loads(atoll(registry, sites_app, "list", "--json"))
    assert [s["name"] for s in listed] == ["lab-a", "lab-b", "lab-c"]
    table = atoll(registry, sites_app, "list", "--region", "eu-west-1")
    assert "lab-a" in table
    assert "3 site(s)" in table

    answer = json.loads(atoll(registry, sites_app, "neighbours", "lab-a", "-k", "1", "--json"))
    assert [n["name"] for n in answer["neighbours"]] == ["lab-b"]
    assert answer["neighbours"][0]["site_id"] == str(near.id)
    shown = atoll(registry, sites_app, "neighbours", str(lab_a.id), "--token", token)
    assert "lab-b" in shown
    assert "lab-c" in shown

    show = json.loads(atoll(registry, sites_app, "show", "lab-a"))
    assert show["site"]["name"] == "lab-a"
    assert show["latest_report"]["class_priors"] == [0.9, 0.1]
    assert "deregistered lab-c" in atoll(registry, sites_app, "deregister", "lab-c")


def test_an_unknown_site_name_is_a_clear_error(registry: Registry) -> None:
    with pytest.raises(AtollError, match="no registered site is named 'nowhere'"):
        atoll(registry, sites_app, "neighbours", "nowhere")


def test_token_create_list_and_revoke(registry: Registry) -> None:
    site, _ = registry.site("edge-1", priors=PRIORS)
    new_token = atoll(
        registry, registry_app, "token", "create", "edge-1", "--revoke-others"
    ).strip()
    assert registry.client(new_token).heartbeat(site.id).status == "live"
    assert registry.raw("GET", "/v1/sites", site.token).status_code == 401
    listing = atoll(registry, registry_app, "token", "list", "edge-1")
    assert site.token_id in listing
    out = atoll(registry, registry_app, "token", "revoke", "edge-1", "--all")
    assert "revoked 1 token(s)" in out
    assert registry.raw("GET", "/v1/sites", new_token).status_code == 401
    with pytest.raises(AtollError, match="TOKEN_ID or pass --all"):
        atoll(registry, registry_app, "token", "revoke", "edge-1")
