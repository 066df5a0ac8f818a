"""Reports: normalised on the way in, history with retention, safe retries, strict checks."""

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from integration.registry.service import ADMIN, LIMITS, PRIORS, SIGNATURE, Registry

from atoll.registry.client import RegistryError
from atoll.registry.core.config import RegistrySettings

pytestmark = pytest.mark.integration
RETENTION = int(LIMITS["ATOLL_REPORT_RETENTION"])
REPORT = {
    "class_priors": [30, 10, 0, 60],
    "accuracy": 0.91,
    "samples": 1200,
    "model_signature": SIGNATURE,
    "model_version": "3",
}


def test_a_report_is_normalised_and_becomes_the_latest(registry: Registry) -> None:
    site, own = registry.site()
    report = own.report(site.id, [30, 10, 0, 60], 0.91, 1200, SIGNATURE, "3", drift=True)
    assert report.class_priors == [0.3, 0.1, 0.0, 0.6]
    assert report.seq == 1
    assert report.drift
    assert registry.admin.latest_report(site.id) == report
    refreshed = registry.admin.get_site(site.id)
    assert (refreshed.model_signature, refreshed.model_version) == (SIGNATURE, "3")
    assert refreshed.reports_total == 1
    assert refreshed.last_seen_at >= site.last_seen_at


def test_history_is_newest_first_and_kept_to_the_retention_limit(registry: Registry) -> None:
    site, own = registry.site()
    for i in range(RETENTION + 3):
        own.report(site.id, [1, i], 0.5, i, SIGNATURE, str(i))
    first = registry.admin.reports(site.id, limit=2)
    second = registry.admin.reports(site.id, limit=10, cursor=first.next_cursor)
    seqs = [r.seq for r in first.reports + second.reports]
    total = RETENTION + 3
    assert seqs == list(range(total, total - RETENTION, -1))
    assert second.next_cursor is None
    assert registry.admin.get_site(site.id).reports_total == total
    assert registry.admin.latest_report(site.id).model_version == str(total - 1)


def test_a_retried_report_is_stored_once(registry: Registry) -> None:
    site, _ = registry.site()
    body = {**REPORT, "id": str(uuid.uuid4())}
    path = f"/v1/sites/{site.id}/reports"
    first = registry.raw("POST", path, site.token, json=body)
    again = registry.raw("POST", path, site.token, json=body)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    assert registry.admin.get_site(site.id).reports_total == 1
    changed = registry.raw("POST", path, site.token, json={**body, "accuracy": 0.2})
    assert changed.status_code == 409
    assert changed.json()["problems"][0]["field"] == "id"
    other, _ = registry.site()
    elsewhere = registry.raw("POST", f"/v1/sites/{other.id}/reports", other.token, json=body)
    assert elsewhere.status_code == 409


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ({"class_priors": [1, -2]}, "class_priors[1]", "greater than or equal to 0"),
        ({"class_priors": [0, 0, 0]}, "class_priors", "must not be all zero"),
        ({"class_priors": [1] * 65}, "class_priors", "65 classes; at most 64"),
        ({"class_priors": []}, "class_priors", "at least 1 item"),
        ({"class_priors": ["many"]}, "class_priors[0]", "valid number"),
        ({"accuracy": 1.01}, "accuracy", "less than or equal to 1"),
        ({"samples": -5}, "samples", "greater than or equal to 0"),
        ({"model_signature": ""}, "model_signature", "at least 1 character"),
        ({"colour": "blue"}, "colour", "unknown field"),
        ({"accuracy": None}, "accuracy", "valid number"),
    ],
)
def test_invalid_reports_are_refused_naming_the_field_and_change_nothing(
    registry: Registry, change: dict, field: str, problem: str
) -> None:
    site, _ = registry.site(priors=PRIORS)
    before = registry.snapshot()
    answer = registry.raw(
        "POST", f"/v1/sites/{site.id}/reports", site.token, json={**REPORT, **change}
    )
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["error"] == "validation_failed"
    assert any(p["field"] == field and problem in p["problem"] for p in body["problems"]), body
    assert registry.snapshot() == before


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_priors_are_refused(registry: Registry, literal: str) -> None:
    site, _ = registry.site()
    raw = (
        f'{{"class_priors": [1, {literal}], "accuracy": 0.5, "samples": 1, '
        '"model_signature": "s", "model_version": "1"}'
    )
    answer = registry.raw(
        "POST", f"/v1/sites/{site.id}/reports", site.token,
        content=raw, headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert answer.status_code == 422
    assert answer.json()["problems"][0]["field"] == "class_priors[1]"


def test_malformed_json_is_refused_naming_the_body(registry: Registry) -> None:
    site, _ = registry.site()
    answer = registry.raw(
        "POST", f"/v1/sites/{site.id}/reports", site.token,
        content=b'{"class_priors": [1,', headers={"Content-Type": "application/json"},
    )  # fmt: skip
    assert answer.status_code == 422
    assert answer.json()["problems"][0] == {
        "field": "body", "location": "body", "problem": "is not valid JSON"
    }  # fmt: skip


def test_bodies_over_the_limit_get_413_however_they_are_sent(registry: Registry) -> None:
    site, _ = registry.site()
    limit = RegistrySettings().max_body_bytes
    big = b'{"class_priors": [' + b"1," * limit + b'1], "accuracy": 0.5}'
    path = f"/v1/sites/{site.id}/reports"
    headers = {"Content-Type": "application/json"}
    before = registry.snapshot()
    declared = registry.raw("POST", path, site.token, content=big, headers=dict(headers))
    chunked = registry.raw(
        "POST", path, site.token, content=iter([big[:1000], big[1000:]]), headers=dict(headers)
    )
    for answer in (declared, chunked):
        assert answer.status_code == 413, answer.text
        assert answer.json()["error"] == "payload_too_large"
        assert str(limit) in answer.json()["message"]
    assert registry.snapshot() == before


def test_reports_to_unknown_or_deregistered_sites_are_refused(registry: Registry) -> None:
    missing = registry.raw(
        "POST", "/v1/sites/00000000-0000-4000-8000-000000000000/reports", json=REPORT
    )
    assert missing.status_code == 404
    site, _ = registry.site()
    registry.admin.deregister_site(site.id)
    before = registry.snapshot()
    gone = registry.raw("POST", f"/v1/sites/{site.id}/reports", json=REPORT)
    assert gone.status_code == 409
    assert "deregistered" in gone.json()["message"]
    assert registry.snapshot() == before


def test_a_site_that_never_reported_has_no_latest_report(registry: Registry) -> None:
    site, own = registry.site()
    with pytest.raises(RegistryError) as caught:
        own.latest_report(site.id)
    assert caught.value.status == 404
    assert registry.admin.reports(site.id).reports == []


def test_reports_sent_at_once_are_batched_numbered_and_kept_to_the_limit(
    registry: Registry,
) -> None:
    """Many reports of two sites at once, with a report id reused and an unknown site among
    them: the group-commit writer stores them in few transactions, yet each gets its own
    answer, seqs run 1..n per site, and only the newest `retention` stay."""
    retention = int(LIMITS["ATOLL_REPORT_RETENTION"])
    one, _ = registry.site("one")
    two, _ = registry.site("two")
    reused = str(uuid.uuid4())

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=registry.url, timeout=30) as http:
            headers = {"Authorization": f"Bearer {ADMIN}"}

            def send(site: object, i: int, report_id: str | None = None) -> Any:
                body = {
                    "class_priors": [1, i + 1], "accuracy": 0.5, "samples": i,
                    "model_signature": SIGNATURE, "model_version": str(i),
                    **({"id": report_id} if report_id else {}),
                }  # fmt: skip
                return http.post(f"/v1/sites/{site}/reports", json=body, headers=headers)

            sends = [send(one.id if i % 3 else two.id, i) for i in range(24)]
            sends.append(send(uuid.uuid4(), 0))
            *many, unknown = await asyncio.gather(*sends)
            # Then one report sent twice at once: in the burst, `retention` newer reports of
            # its site in the same batch could have dropped the first copy at once, and a
            # retry of a report no longer kept is stored anew.
            pair = await asyncio.gather(send(one.id, 99, reused), send(one.id, 99, reused))
            return [*many, *pair, unknown]

    batches_before = _batches(registry)
    answers = asyncio.run(burst())
    assert _batches(registry) - batches_before < len(answers)  # some went together
    assert [a.status_code for a in answers[-1:]] == [404]
    assert sorted(a.status_code for a in answers[-3:-1]) == [200, 201]  # stored once
    assert answers[-3].json()["seq"] == answers[-2].json()["seq"]
    stored = [a.json() for a in answers[:-1] if a.status_code == 201]
    for site, count in ((one, 16 + 1), (two, 8)):
        seqs = sorted(r["seq"] for r in stored if r["site_id"] == str(site.id))
        assert seqs == list(range(1, count + 1))
        kept = registry.admin.reports(site.id, limit=100).reports
        assert [r.seq for r in kept] == list(range(count, count - retention, -1))
        assert registry.admin.get_site(site.id).reports_total == count


def _batches(registry: Registry) -> float:
    """Batches the report writer has committed, from /metrics."""
    for line in registry.raw("GET", "/metrics", token=None).text.splitlines():
        if line.startswith("atoll_registry_report_batch_size_count"):
            return float(line.split()[-1])
    return 0.0
