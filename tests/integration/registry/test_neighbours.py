"""Neighbours: live sites with the same model signature, ranked by Jensen-Shannon divergence."""

import pytest
from integration.registry.service import SIGNATURE, Registry

from atoll.registry.client import RegistryError
from atoll.registry.neighbours import js_divergence

pytestmark = pytest.mark.integration


def test_neighbours_are_the_nearest_live_compatible_sites(registry: Registry) -> None:
    me, mine = registry.site("me", priors=[8, 1, 1])
    near, _ = registry.site("near", priors=[7, 2, 1])
    mid, _ = registry.site("mid", priors=[4, 4, 2])
    far, _ = registry.site("far", priors=[0, 1, 9])
    other_model, other = registry.site("other-model")
    other.report(other_model.id, [8, 1, 1], 0.9, 10, "sha256:different", "1")
    quiet, _ = registry.site("quiet", priors=[8, 1, 1])
    registry.backdate(quiet.id, 3600)
    gone, _ = registry.site("gone", priors=[8, 1, 1])
    registry.admin.deregister_site(gone.id)

    answer = mine.neighbours(me.id, k=5)
    assert answer.site_id == me.id
    assert answer.model_signature == SIGNATURE
    assert answer.candidates == 3
    assert [n.name for n in answer.neighbours] == ["near", "mid", "far"]
    for n, priors in zip(answer.neighbours, ([7, 2, 1], [4, 4, 2], [0, 1, 9]), strict=True):
        expected = js_divergence([0.8, 0.1, 0.1], [p / sum(priors) for p in priors])
        assert n.divergence == pytest.approx(expected, abs=1e-9)
        assert n.accuracy == 0.8
        assert n.model_version == "1"
    assert [n.site_id for n in mine.neighbours(me.id, k=2).neighbours] == [near.id, mid.id]
    assert far.id not in {n.site_id for n in mine.neighbours(me.id, k=2).neighbours}


def test_a_heartbeat_makes_a_quiet_site_a_candidate_again(registry: Registry) -> None:
    me, mine = registry.site(priors=[1, 1])
    quiet, own = registry.site(priors=[1, 1])
    registry.backdate(quiet.id, 3600)
    assert mine.neighbours(me.id).neighbours == []
    own.heartbeat(quiet.id)
    assert [n.site_id for n in mine.neighbours(me.id).neighbours] == [quiet.id]


def test_a_query_may_ask_for_its_own_window(registry: Registry) -> None:
    me, mine = registry.site(priors=[1, 1])
    quiet, _ = registry.site(priors=[1, 1])
    registry.backdate(quiet.id, 3600)
    default = mine.neighbours(me.id)
    assert default.neighbours == [] and default.window_s < 3600
    wide = mine.neighbours(me.id, window_s=7200)
    assert wide.window_s == 7200
    assert [n.site_id for n in wide.neighbours] == [quiet.id]
    assert mine.neighbours(me.id, window_s=1800).neighbours == []
    for bad in (0, -5, "soon"):
        params = {"window_s": bad}
        answer = registry.raw("GET", f"/v1/sites/{me.id}/neighbours", params=params)
        assert answer.status_code == 422, bad
        assert answer.json()["problems"][0]["field"] == "window_s"


def test_a_site_that_never_reported_asks_with_its_priors(registry: Registry) -> None:
    newcomer, client = registry.site()
    with pytest.raises(RegistryError) as caught:
        client.neighbours(newcomer.id)
    assert caught.value.status == 409
    assert "POST /v1/neighbours" in str(caught.value)
    a, _ = registry.site("a", priors=[9, 1])
    b, _ = registry.site("b", priors=[1, 9])
    answer = client.neighbours_for_priors([90, 10], SIGNATURE, k=5)
    assert answer.site_id is None
    assert [n.site_id for n in answer.neighbours] == [a.id, b.id]
    assert answer.neighbours[0].divergence == pytest.approx(0.0, abs=1e-12)
    excluded = client.neighbours_for_priors([90, 10], SIGNATURE, exclude=[a.id])
    assert [n.site_id for n in excluded.neighbours] == [b.id]
    assert client.neighbours_for_priors([1, 1], "sha256:nobody").neighbours == []


def test_k_is_bounded_by_the_configured_maximum(registry: Registry) -> None:
    me, _ = registry.site(priors=[1, 2])
    answer = registry.raw("GET", f"/v1/sites/{me.id}/neighbours", params={"k": 51})
    assert answer.status_code == 422
    assert answer.json()["problems"][0] == {
        "field": "k", "location": "query", "problem": "must be at most 50"
    }  # fmt: skip
    assert registry.raw("GET", f"/v1/sites/{me.id}/neighbours", params={"k": 0}).status_code == 422
    schema = registry.raw("GET", "/openapi.json").json()
    query = schema["paths"]["/v1/sites/{site_id}/neighbours"]["get"]["parameters"]
    assert next(p for p in query if p["name"] == "k")["schema"]["maximum"] == 50
