"""Probes and metrics."""

import pytest
from integration.registry.service import PRIORS, Registry

pytestmark = pytest.mark.integration


def test_health_and_readiness_need_no_token(registry: Registry) -> None:
    assert registry.raw("GET", "/healthz", None).json() == {"status": "ok"}
    ready = registry.raw("GET", "/readyz", None)
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert body["schema_revision"] == body["schema_head"]
    assert body["database"] == registry.service.engine.dialect.name


def metric(text: str, series: str) -> float:
    """The value of one series (name and labels, exactly as exposed), or 0 if absent."""
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return 0.0


def test_metrics_count_requests_by_route_and_sites_by_state(registry: Registry) -> None:
    route = (
        'atoll_registry_requests_total{method="POST",'
        'route="/v1/sites/{site_id}/reports",status="201"}'
    )
    before = metric(registry.raw("GET", "/metrics", None).text, route)
    live, _ = registry.site(priors=PRIORS)
    stale, _ = registry.site(priors=PRIORS)
    registry.backdate(stale.id, 3600)
    text = registry.raw("GET", "/metrics", None).text
    assert metric(text, route) == before + 2
    assert metric(text, 'atoll_registry_sites{status="live"}') == 1
    assert metric(text, 'atoll_registry_sites{status="stale"}') == 1
    assert "atoll_registry_request_seconds_bucket" in text
    assert live.id != stale.id


def test_unknown_paths_answer_json_errors(registry: Registry) -> None:
    answer = registry.raw("GET", "/v2/sites")
    assert answer.status_code == 404
    assert answer.json()["problems"] == [
        {"field": "path", "location": "path", "problem": "no such path: /v2/sites"}
    ]
