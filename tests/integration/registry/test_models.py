"""Model artifacts: immutable records with their sites, clock and lineage."""

import uuid

import pytest
from integration.registry.service import Registry

from atoll.registry.client import RegistryError

pytestmark = pytest.mark.integration


def checksum(n: int) -> str:
    return f"sha256:{n:064x}"


def test_lineage_runs_from_the_parent_to_the_root(registry: Registry) -> None:
    a, _ = registry.site("a")
    b, _ = registry.site("b")
    root = registry.admin.record_model([a.id, b.id], checksum(1), 100, "s3://m/0", job="j", clock=0)
    child = registry.admin.record_model(
        [a.id], checksum(2), 110, "s3://m/1", job="j", clock=50, parent=root.id
    )
    grandchild = registry.admin.record_model(
        [b.id], checksum(3), 120, "s3://m/2", job="j", clock=100, parent=child.id
    )
    assert sorted(root.sites) == sorted([a.id, b.id])
    assert root.created_by == "admin"
    lineage = registry.admin.lineage(grandchild.id)
    assert [m.id for m in lineage.ancestors] == [child.id, root.id]
    assert registry.admin.lineage(root.id).ancestors == []
    assert registry.admin.get_model(child.id) == child


def test_listing_filters_by_job_and_site_newest_first(registry: Registry) -> None:
    a, _ = registry.site("a")
    b, _ = registry.site("b")
    made = [
        registry.admin.record_model([site.id], checksum(i), i, f"s3://m/{i}", job=job)
        for i, (site, job) in enumerate([(a, "j1"), (b, "j1"), (a, "j2"), (a, "j1")])
    ]
    every = registry.admin.list_models(limit=3)
    rest = registry.admin.list_models(limit=3, cursor=every.next_cursor)
    assert [m.id for m in every.models + rest.models] == [m.id for m in reversed(made)]
    assert rest.next_cursor is None
    assert [m.id for m in registry.admin.list_models(job="j1").models] == [
        made[3].id,
        made[1].id,
        made[0].id,
    ]
    assert [m.id for m in registry.admin.list_models(site=str(b.id)).models] == [made[1].id]


def test_unknown_sites_and_parents_are_refused_naming_them(registry: Registry) -> None:
    a, _ = registry.site("a")
    missing = str(uuid.uuid4())
    body = {
        "sites": [str(a.id), missing],
        "checksum": checksum(1),
        "size_bytes": 1,
        "uri": "s3://x/y",
    }
    before = registry.snapshot()
    answer = registry.raw("POST", "/v1/models", json=body)
    assert answer.status_code == 422
    assert answer.json()["problems"][0]["field"] == "sites[1]"
    orphan = registry.raw(
        "POST", "/v1/models", json={**body, "sites": [str(a.id)], "parent": missing}
    )
    assert orphan.status_code == 422
    assert orphan.json()["problems"][0]["field"] == "parent"
    twice = registry.raw("POST", "/v1/models", json={**body, "sites": [str(a.id)] * 2})
    assert twice.status_code == 422
    assert twice.json()["problems"][0]["field"] == "sites"
    assert registry.snapshot() == before


def test_a_retried_record_is_stored_once_and_ids_are_not_reused(registry: Registry) -> None:
    a, _ = registry.site("a")
    model_id = uuid.uuid4()
    first = registry.admin.record_model([a.id], checksum(7), 7, "s3://m/7", model_id=model_id)
    again = registry.admin.record_model([a.id], checksum(7), 7, "s3://m/7", model_id=model_id)
    assert first == again
    assert len(registry.admin.list_models().models) == 1
    with pytest.raises(RegistryError) as caught:
        registry.admin.record_model([a.id], checksum(8), 7, "s3://m/7", model_id=model_id)
    assert caught.value.status == 409


def test_models_are_immutable(registry: Registry) -> None:
    a, _ = registry.site("a")
    model = registry.admin.record_model([a.id], checksum(1), 1, "s3://m/1")
    for method in ("PUT", "PATCH", "DELETE"):
        answer = registry.raw(method, f"/v1/models/{model.id}", json={})
        assert answer.status_code == 405
        assert answer.json()["error"] == "method_not_allowed"
