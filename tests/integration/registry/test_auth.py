"""Auth: every /v1 request needs a valid token; a site writes only its own records."""

import json
import time
from pathlib import Path

import httpx
import pytest
from integration.registry.service import (
    ADMIN,
    LIMITS,
    PRIORS,
    SIGNATURE,
    DatabaseFactory,
    Registry,
    two_processes,
)

from atoll.registry.client import RegistryClient
from atoll.registry.main import create_app

pytestmark = pytest.mark.integration
SOME_ID = "00000000-0000-4000-8000-000000000000"


def operations() -> list[tuple[str, str]]:
    """Every /v1 operation in the service's own OpenAPI schema."""
    schema = create_app().openapi()
    return [
        (method.upper(), path)
        for path, item in schema["paths"].items()
        if path.startswith("/v1/")
        for method in item
    ]


def fill(path: str, site_id: str) -> str:
    return (
        path.replace("{site_id}", site_id)
        .replace("{model_id}", SOME_ID)
        .replace("{token_id}", "abcdef0123456789")
    )


WRITE_BODIES = {
    "/v1/sites": {"name": "intruder", "region": "r"},
    "/v1/sites/{site_id}/reports": {
        "class_priors": PRIORS, "accuracy": 0.5, "samples": 1,
        "model_signature": SIGNATURE, "model_version": "1",
    },
    "/v1/sites/{site_id}": {"endpoint": "https://evil.example"},
    "/v1/models": {
        "sites": [SOME_ID], "checksum": "sha256:" + "0" * 64, "size_bytes": 1, "uri": "s3://b/k",
    },
    "/v1/neighbours": {"class_priors": PRIORS, "model_signature": SIGNATURE},
}  # fmt: skip


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer atoll_not-a-real-token", f"Bearer {ADMIN}x", f"Basic {ADMIN}", "Bearer"],
    # Fixed ids: the admin token is random per run, and pytest-xdist workers must agree.
    ids=["none", "unknown-token", "admin-token-altered", "basic-scheme", "empty-bearer"],
)
def test_no_request_without_a_valid_token_succeeds_or_changes_anything(
    registry: Registry, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    site, _ = registry.site(priors=PRIORS)
    before = registry.snapshot()
    for method, path in operations():
        body = WRITE_BODIES.get(path)
        answer = registry.raw(
            method,
            fill(path, str(site.id)),
            None,
            headers=dict(headers),
            json=body if method != "GET" else None,
        )
        assert answer.status_code == 401, (method, path, answer.text)
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["problems"][0]["field"] == "Authorization"
    assert registry.snapshot() == before


def test_a_site_cannot_touch_another_sites_records(registry: Registry) -> None:
    mine, me = registry.site("mine", priors=PRIORS)
    theirs, _ = registry.site("theirs", priors=PRIORS)
    before = registry.snapshot()
    for method, path in operations():
        if method == "GET" and not path.endswith("/tokens"):
            continue  # reads are open to every valid token
        if "{site_id}" not in path:
            continue
        body = WRITE_BODIES.get(path, {})
        answer = registry.raw(method, fill(path, str(theirs.id)), mine.token, json=body)
        assert answer.status_code == 403, (method, path, answer.text)
        assert "may not change site" in answer.json()["message"]
    assert registry.snapshot() == before
    assert me.get_site(theirs.id).name == "theirs"  # reading is allowed


def test_only_admins_register_sites(registry: Registry) -> None:
    mine, _ = registry.site()
    answer = registry.raw("POST", "/v1/sites", mine.token, json={"name": "x", "region": "r"})
    assert answer.status_code == 403
    assert answer.json()["message"] == "this needs an admin token"


def test_a_site_records_only_models_trained_on_its_data_alone(registry: Registry) -> None:
    mine, me = registry.site()
    theirs, _ = registry.site()
    checksum = "sha256:" + "1" * 64
    assert me.record_model([mine.id], checksum, 10, "s3://b/mine").created_by == str(mine.id)
    for sites in ([theirs.id], [mine.id, theirs.id]):
        body = {
            "sites": [str(s) for s in sites],
            "checksum": checksum,
            "size_bytes": 1,
            "uri": "s3://b/k",
        }
        assert registry.raw("POST", "/v1/models", mine.token, json=body).status_code == 403


def test_rotation_issues_a_new_token_and_ends_the_old_ones(registry: Registry) -> None:
    site, old = registry.site()
    spare = registry.admin.create_token(site.id)
    rotated = old.create_token(site.id, revoke_others=True)  # a site may rotate its own
    new = registry.client(rotated.token)
    assert new.heartbeat(site.id).status == "live"
    for token in (site.token, spare.token):
        assert registry.raw("POST", f"/v1/sites/{site.id}/heartbeat", token).status_code == 401
    listed = {t.id: t.active for t in registry.admin.list_tokens(site.id).tokens}
    assert listed == {site.token_id: False, spare.id: False, rotated.id: True}
    assert rotated.token not in json.dumps(
        registry.raw("GET", f"/v1/sites/{site.id}/tokens").json()
    )


def test_a_revoked_token_stops_working_at_once(registry: Registry) -> None:
    site, own = registry.site()
    extra = registry.admin.create_token(site.id)
    revoked = registry.admin.revoke_token(site.id, extra.id)
    assert revoked.active is False
    assert revoked.revoked_at is not None
    assert registry.raw("GET", "/v1/sites", extra.token).status_code == 401
    assert own.heartbeat(site.id).status == "live"  # the other token still works
    assert registry.admin.revoke_token(site.id, extra.id).revoked_at == revoked.revoked_at
    other, _ = registry.site()
    answer = registry.raw("DELETE", f"/v1/sites/{other.id}/tokens/{extra.id}")
    assert answer.status_code == 404  # a token is revoked only through its own site


def test_other_server_processes_refuse_a_revoked_token_within_the_cache_interval(
    fresh_database: DatabaseFactory, tmp_path: Path
) -> None:
    """Process two trusts the tokens it verified until it reads that revocations moved:
    a token revoked, or its site deregistered, on process one."""
    env = {**LIMITS, "ATOLL_AUTH_CACHE_S": "0.3"}
    with two_processes(fresh_database, tmp_path, env) as (_, _, two, admin):
        site = admin.register_site("revoked-elsewhere", "r")
        gone = admin.register_site("deregistered-elsewhere", "r")
        extra = admin.create_token(site.id)
        for token in (site.token, extra.token, gone.token):
            with RegistryClient(two.url, token) as client:  # verified, so cached, on two
                assert client.list_sites().sites
        admin.revoke_token(site.id, extra.id)
        admin.deregister_site(gone.id)
        time.sleep(1.0)  # a few of two's reads of the revocation counts
        with httpx.Client(base_url=two.url) as http:
            for token, status in ((extra.token, 401), (gone.token, 401), (site.token, 200)):
                headers = {"Authorization": f"Bearer {token}"}
                assert http.get("/v1/sites", headers=headers).status_code == status


def test_any_of_several_admin_tokens_works(registry: Registry) -> None:
    # The service runs with one admin token; a second one is a setting, tested in unit tests.
    assert registry.raw("GET", "/v1/sites", ADMIN).status_code == 200
    assert registry.raw("GET", "/v1/sites", ADMIN.upper()).status_code == 401
