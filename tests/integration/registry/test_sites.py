"""Sites: register, list with filters and stable pages, read, update, heartbeat, deregister."""

import pytest
from integration.registry.service import ADMIN, PRIORS, SIGNATURE, Registry

from atoll.registry.client import RegistryError

pytestmark = pytest.mark.integration


def test_registration_answers_the_site_and_its_token_once(registry: Registry) -> None:
    created = registry.admin.register_site(
        "eu-hospital-1",
        "eu-west-1",
        endpoint="https://agent.eu-hospital-1.example:8443",
        labels={"tier": "hospital"},
        capabilities={"gpus": 2, "workers": 4},
    )
    assert created.token.startswith("atoll_")
    assert created.status == "live"
    site = registry.admin.get_site(created.id)
    assert site.model_dump() == {
        k: v for k, v in created.model_dump().items() if k in site.model_dump()
    }
    assert site.capabilities.gpus == 2
    assert site.labels == {"tier": "hospital"}
    assert "token" not in registry.raw("GET", f"/v1/sites/{created.id}").json()
    # Only the hash is stored.
    assert created.token not in str(registry.snapshot())


def test_a_name_is_taken_until_its_site_deregisters(registry: Registry) -> None:
    first, _ = registry.site("lab-a")
    with pytest.raises(RegistryError) as caught:
        registry.admin.register_site("lab-a", "us-east-1")
    assert caught.value.status == 409
    assert caught.value.problems[0].field == "name"
    registry.admin.deregister_site(first.id)
    second = registry.admin.register_site("lab-a", "us-east-1")
    assert second.id != first.id
    assert registry.admin.find_site("lab-a").id == second.id  # type: ignore[union-attr]


def test_listing_filters_by_region_status_and_signature(registry: Registry) -> None:
    eu, _ = registry.site("eu-1", "eu-west-1", priors=PRIORS)
    us, _ = registry.site("us-1", "us-east-1", priors=PRIORS)
    quiet, _ = registry.site("eu-2", "eu-west-1")
    gone, _ = registry.site("eu-3", "eu-west-1")
    registry.admin.deregister_site(gone.id)
    registry.backdate(quiet.id, 3600)

    def names(**filters: str) -> list[str]:
        return [s.name for s in registry.admin.iter_sites(**filters)]

    assert names() == ["eu-1", "eu-2", "us-1"]
    assert names(region="eu-west-1") == ["eu-1", "eu-2"]
    assert names(status="live") == ["eu-1", "us-1"]
    assert names(status="stale") == ["eu-2"]
    assert names(status="deregistered") == ["eu-3"]
    assert names(model_signature=SIGNATURE) == ["eu-1", "us-1"]
    assert registry.admin.get_site(quiet.id).status == "stale"
    assert registry.admin.get_site(gone.id).status == "deregistered"
    assert eu.id != us.id


def test_pages_are_stable_while_sites_register(registry: Registry) -> None:
    for i in range(7):
        registry.site(f"s{i}")
    first = registry.admin.list_sites(limit=3)
    registry.site("s0a")  # sorts into the first page, which was already read
    rest = []
    cursor = first.next_cursor
    while cursor:
        page = registry.admin.list_sites(limit=3, cursor=cursor)
        rest += [s.name for s in page.sites]
        cursor = page.next_cursor
    assert [s.name for s in first.sites] == ["s0", "s1", "s2"]
    assert rest == ["s3", "s4", "s5", "s6"]  # nothing repeated, nothing skipped


def test_a_forged_cursor_is_refused_naming_it(registry: Registry) -> None:
    answer = registry.raw("GET", "/v1/sites", params={"cursor": "bm9wZQ"})
    assert answer.status_code == 422
    assert answer.json()["problems"] == [
        {"field": "cursor", "location": "query", "problem": "is not a cursor this service issued"}
    ]


def test_unknown_filters_are_refused_rather_than_ignored(registry: Registry) -> None:
    answer = registry.raw("GET", "/v1/sites", params={"regoin": "eu-west-1"})
    assert answer.status_code == 422
    assert answer.json()["problems"][0] == {
        "field": "regoin", "location": "query", "problem": "unknown field"
    }  # fmt: skip


def test_a_site_updates_its_own_endpoint_labels_and_capabilities(registry: Registry) -> None:
    created, own = registry.site("edge-1")
    updated = own.update_site(
        created.id, endpoint="https://edge-1.example", capabilities={"gpus": 1}
    )
    assert updated.endpoint == "https://edge-1.example"
    assert updated.capabilities.gpus == 1
    assert updated.updated_at > created.updated_at
    cleared = own.update_site(created.id, endpoint=None, labels={"rack": "7"})
    assert cleared.endpoint is None
    assert cleared.labels == {"rack": "7"}
    assert cleared.capabilities.gpus == 1  # left out, so unchanged


def test_a_heartbeat_brings_a_stale_site_back_to_live(registry: Registry) -> None:
    created, own = registry.site()
    registry.backdate(created.id, 3600)
    assert registry.admin.get_site(created.id).status == "stale"
    assert own.heartbeat(created.id).status == "live"


def test_deregistration_keeps_the_record_and_ends_the_tokens(registry: Registry) -> None:
    created, own = registry.site(priors=PRIORS)
    gone = registry.admin.deregister_site(created.id)
    assert gone.status == "deregistered"
    assert gone.deregistered_at is not None
    assert registry.admin.deregister_site(created.id).deregistered_at == gone.deregistered_at
    assert registry.admin.latest_report(created.id).seq == 1  # history stays readable
    with pytest.raises(RegistryError) as caught:
        own.heartbeat(created.id)
    assert caught.value.status == 401
    for method, path in [("PATCH", ""), ("POST", "/heartbeat")]:
        answer = registry.raw(method, f"/v1/sites/{created.id}{path}", ADMIN, json={})
        assert answer.status_code == 409, (method, path)


def test_unknown_sites_are_404_and_malformed_ids_422(registry: Registry) -> None:
    missing = registry.raw("GET", "/v1/sites/00000000-0000-4000-8000-000000000000")
    assert missing.status_code == 404
    assert missing.json()["problems"][0]["field"] == "site_id"
    malformed = registry.raw("GET", "/v1/sites/not-a-uuid")
    assert malformed.status_code == 422
    assert malformed.json()["problems"][0]["field"] == "site_id"
