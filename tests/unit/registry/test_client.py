"""The client's retries and errors, against a scripted transport (no server)."""

import json
from collections.abc import Callable

import httpx
import pytest

from atoll.registry.client import RegistryClient, RegistryError, RegistryUnavailable

SITE_ID = "00000000-0000-0000-0000-000000000001"
REPORT = {
    "id": "00000000-0000-0000-0000-0000000000aa",
    "site_id": SITE_ID,
    "seq": 1,
    "created_at": "2026-01-01T00:00:00Z",
    "class_priors": [1.0],
    "accuracy": 0.5,
    "samples": 1,
    "model_signature": "s",
    "model_version": "1",
    "drift": False,
}


def scripted(*answers: Callable[[httpx.Request], httpx.Response]) -> tuple[RegistryClient, list]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[min(len(seen), len(answers)) - 1](request)

    client = RegistryClient(
        "http://registry.test", "tok", retries=3, backoff_s=0, transport=httpx.MockTransport(handle)
    )
    return client, seen


def fail(kind: type[Exception]) -> Callable[[httpx.Request], httpx.Response]:
    def raise_(request: httpx.Request) -> httpx.Response:
        raise kind("scripted", request=request)  # type: ignore[call-arg]

    return raise_


def answer(status: int, body: dict) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: httpx.Response(status, json=body)


def report(client: RegistryClient) -> object:
    return client.report(SITE_ID, [1], 0.5, 1, "s", "1")


def test_a_report_is_retried_with_the_same_id_after_a_lost_answer() -> None:
    client, seen = scripted(fail(httpx.ReadTimeout), answer(201, REPORT))
    assert report(client).seq == 1  # type: ignore[attr-defined]
    ids = {json.loads(r.content)["id"] for r in seen}
    assert len(seen) == 2
    assert len(ids) == 1  # the server stores it once
    assert seen[0].headers["authorization"] == "Bearer tok"


def test_a_registration_is_not_resent_once_it_may_have_arrived() -> None:
    client, seen = scripted(fail(httpx.ReadTimeout), answer(201, {}))
    with pytest.raises(RegistryUnavailable):
        client.register_site("a", "r")
    assert len(seen) == 1


def test_anything_is_retried_when_the_connection_was_refused() -> None:
    site = {
        **{k: None for k in ("endpoint", "deregistered_at", "model_signature", "model_version")},
        "id": SITE_ID, "name": "a", "region": "r", "labels": {}, "capabilities": {},
        "status": "live", "registered_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z", "last_seen_at": "2026-01-01T00:00:00Z",
        "reports_total": 0, "token": "t", "token_id": "i",
    }  # fmt: skip
    client, seen = scripted(fail(httpx.ConnectError), answer(201, site))
    assert client.register_site("a", "r").token == "t"
    assert len(seen) == 2


def test_unavailable_answers_are_retried_then_reported() -> None:
    busy = answer(503, {"error": "unavailable", "message": "db", "problems": []})
    client, seen = scripted(busy)
    with pytest.raises(RegistryError) as caught:
        client.get_site(SITE_ID)
    assert caught.value.status == 503
    assert len(seen) == 4


def test_refusals_are_not_retried_and_name_the_field() -> None:
    body = {
        "error": "validation_failed",
        "message": "invalid request",
        "problems": [{"field": "class_priors[1]", "location": "body", "problem": "must be finite"}],
    }
    client, seen = scripted(answer(422, body))
    with pytest.raises(RegistryError, match="422") as caught:
        report(client)
    assert len(seen) == 1
    assert caught.value.problems[0].field == "class_priors[1]"


def test_a_non_json_error_still_says_what_happened() -> None:
    client, _ = scripted(lambda request: httpx.Response(502, text="bad gateway"))
    client.retries = 0
    with pytest.raises(RegistryError, match="bad gateway"):
        client.get_site(SITE_ID)


def test_from_env_falls_back_to_the_admin_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATOLL_REGISTRY_TOKEN", raising=False)
    monkeypatch.setenv("ATOLL_ADMIN_TOKEN", "first-admin-token-1,second-admin-token")
    monkeypatch.setenv("ATOLL_REGISTRY_URL", "http://elsewhere:1234/")
    with RegistryClient.from_env() as client:
        assert client.url == "http://elsewhere:1234"
        assert client._http.headers["authorization"] == "Bearer first-admin-token-1"
