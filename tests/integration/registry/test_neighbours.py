"""Neighbours: live sites with the same model signature, ranked by Jensen-Shannon divergence."""

import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from integration.registry.service import (
    ADMIN,
    LIMITS,
    SIGNATURE,
    DatabaseFactory,
    Registry,
    two_processes,
)
from sqlalchemy import text

from atoll.platform.service.database import make_engine
from atoll.platform.service.sql import utcnow
from atoll.registry.client import RegistryClient, RegistryError
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


def test_the_in_memory_snapshot_answers_as_the_database_does(
    fresh_database: DatabaseFactory, tmp_path: Path
) -> None:
    """Two server processes on one database, each keeping the snapshot: one's own reports
    count at once, the other's (and changes made in the database) once it reloads."""
    env = {**LIMITS, "ATOLL_NEIGHBOUR_CACHE_S": "0.3"}
    with (
        two_processes(fresh_database, tmp_path, env) as (url, _, two, admin),
        RegistryClient(two.url, ADMIN) as admin_two,
    ):
        sites = {}
        for name, priors in {"me": [8, 1, 1], "near": [7, 2, 1], "mid": [4, 4, 2]}.items():
            sites[name] = admin.register_site(name, "r")
            admin.report(sites[name].id, priors, 0.8, 10, SIGNATURE, "1")
        gone = admin.register_site("gone", "r")
        admin.report(gone.id, [8, 1, 1], 0.8, 10, SIGNATURE, "1")
        admin.deregister_site(gone.id)
        me = sites["me"].id

        answer = admin.neighbours(me, k=5)  # at once: no reload in between
        assert [n.name for n in answer.neighbours] == ["near", "mid"]
        assert answer.candidates == 2
        expected = js_divergence([0.8, 0.1, 0.1], [0.7, 0.2, 0.1])
        assert answer.neighbours[0].divergence == pytest.approx(expected, abs=1e-9)

        far = admin_two.register_site("far", "r")
        admin_two.report(far.id, [0, 1, 9], 0.8, 10, SIGNATURE, "1")
        admin_two.report(sites["near"].id, [0, 1, 9], 0.8, 10, SIGNATURE, "2")  # near moves
        time.sleep(1.0)  # a few reloads
        names = [n.name for n in admin.neighbours(me, k=5).neighbours]
        assert names[0] == "mid" and set(names[1:]) == {"near", "far"}  # equal priors: a tie
        answer = admin.neighbours(me, k=5)
        assert {n.name: n.model_version for n in answer.neighbours}["near"] == "2"

        engine = make_engine(url, pool_size=1)
        try:
            with engine.begin() as conn:  # mid goes quiet, as if an hour had passed
                conn.execute(
                    text("UPDATE sites SET last_seen_at = :t WHERE id = :id"),
                    {"t": _an_hour_ago(engine.dialect.name), "id": str(sites["mid"].id)},
                )
        finally:
            engine.dispose()
        time.sleep(1.0)
        assert "mid" not in {n.name for n in admin.neighbours(me, k=5).neighbours}
        assert admin.neighbours(me, k=5).candidates == 2
        wide = admin.neighbours(me, k=5, window_s=7200)
        assert {n.name for n in wide.neighbours} == {"mid", "near", "far"}
        assert admin_two.neighbours(me, k=5).candidates == 2  # the other process agrees


def _an_hour_ago(dialect: str) -> datetime:
    when = utcnow() - timedelta(hours=1)
    return when.replace(tzinfo=None) if dialect == "sqlite" else when
