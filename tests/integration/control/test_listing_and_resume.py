"""What the dashboard needs of the control plane's API: sites and jobs filtered, sorted and
paged by the database, sites declared before their agent joins, and an event stream with
ids that resumes after a reconnect (`Last-Event-ID`) and sends heartbeats."""

import secrets
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from integration.control.harness import DIGITS_JOB, control_api, served_control_api, wait_for

from atoll.platform.bus.connection import Bus
from atoll.platform.bus.messages import AgentStatus, Telemetry
from atoll.platform.control.client import parse_events

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": "Bearer test-admin-" + secrets.token_hex(12)}


@pytest.fixture
def api(tmp_path: Path, bus: Bus) -> Iterator[TestClient]:
    token = ADMIN["Authorization"].removeprefix("Bearer ")
    with control_api(tmp_path, bus, token, events_heartbeat_s=0.3) as client:
        yield client


def declare(api: TestClient, name: str, region: str) -> None:
    answer = api.post("/v1/sites", json={"name": name, "region": region}, headers=ADMIN)
    assert answer.status_code == 201, answer.text


def test_sites_are_declared_then_filtered_sorted_and_paged_by_the_database(
    api: TestClient,
) -> None:
    assert api.post("/v1/sites", json={"name": "x", "region": "r"}).status_code == 401
    for i in range(7):
        declare(api, f"site-{i}", "eu" if i % 2 else "us")
    declared = api.get("/v1/sites/site-3").json()
    assert declared["joined"] is False
    assert declared["online"] is False
    assert declared["region"] == "eu"
    again = api.post("/v1/sites", json={"name": "site-3", "region": "eu"}, headers=ADMIN)
    assert again.status_code == 409
    assert api.post("/v1/sites/site-3/drain", headers=ADMIN).json()["state"] == "draining"

    page = api.get("/v1/sites", params={"limit": 3, "offset": 3}).json()
    assert page["total"] == 7
    assert [s["name"] for s in page["sites"]] == ["site-3", "site-4", "site-5"]
    eu = api.get("/v1/sites", params={"region": "eu", "sort": "-name"}).json()
    assert [s["name"] for s in eu["sites"]] == ["site-5", "site-3", "site-1"]
    assert eu["total"] == 3
    draining = api.get("/v1/sites", params={"state": "draining"}).json()
    assert [s["name"] for s in draining["sites"]] == ["site-3"]
    by_state = api.get("/v1/sites", params={"sort": "-state", "limit": 1}).json()
    assert by_state["sites"][0]["name"] == "site-3"  # "draining" sorts after "active"
    assert api.get("/v1/sites", params={"online": "true"}).json()["total"] == 0
    assert api.get("/v1/sites", params={"name": "te-1"}).json()["total"] == 1
    assert api.get("/v1/sites", params={"name": "%"}).json()["total"] == 0  # no wildcard
    assert api.get("/v1/sites", params={"sort": "colour"}).status_code == 422
    assert api.get("/v1/sites", params={"limit": 0}).status_code == 422


def test_a_declared_site_keeps_what_operators_decided_when_its_agent_joins(
    api: TestClient, bus: Bus
) -> None:
    declare(api, "lab-b", "eu-west-1")
    assert api.post("/v1/sites/lab-b/drain", headers=ADMIN).status_code == 200
    status = AgentStatus(
        site="lab-b", incarnation="i1", seq=1, time=time.time(), state="idle",
        region="eu-west-2", geo_host="127.0.0.1", geo_port=9400, geo_ports=1, version="t",
    )  # fmt: skip
    bus.publish_status(status)
    joined = wait_for(
        "lab-b's agent to join",
        lambda: (s := api.get("/v1/sites/lab-b").json())["joined"] and s,
        10,
    )
    assert joined["state"] == "draining"
    assert joined["region"] == "eu-west-2"  # what the agent says wins


def test_jobs_page_by_offset_with_a_total(api: TestClient) -> None:
    ids = [
        api.post("/v1/jobs", json={"spec": DIGITS_JOB, "name": f"j{i}"}, headers=ADMIN).json()["id"]
        for i in range(5)
    ]
    newest = api.get("/v1/jobs", params={"limit": 2, "offset": 0}).json()
    assert newest["total"] == 5
    assert [j["id"] for j in newest["jobs"]] == ids[::-1][:2]
    oldest = api.get("/v1/jobs", params={"limit": 2, "sort": "submitted"}).json()
    assert [j["id"] for j in oldest["jobs"]] == ids[:2]
    last = api.get("/v1/jobs", params={"limit": 2, "offset": 4}).json()
    assert [j["id"] for j in last["jobs"]] == [ids[0]]
    assert api.get("/v1/jobs", params={"state": "running"}).json()["total"] == 0


def read_events(api: httpx.Client, count: int, **kwargs: object) -> list:
    headers = kwargs.pop("headers", {})
    with api.stream("GET", "/v1/events", headers=headers, **kwargs) as stream:  # type: ignore[arg-type]
        found = []
        for event in parse_events(stream.iter_lines()):
            found.append(event)
            if len(found) == count:
                return found
    return found


def test_events_carry_ids_resume_after_last_event_id_and_heartbeat(
    tmp_path: Path, bus: Bus
) -> None:
    token = ADMIN["Authorization"].removeprefix("Bearer ")
    with served_control_api(tmp_path, bus, token, events_heartbeat_s=0.3) as served:
        events_carry_ids_resume_and_heartbeat(served.client, served.app.state.hub, bus)


def events_carry_ids_resume_and_heartbeat(api: httpx.Client, hub: Any, bus: Bus) -> None:
    job_id = api.post("/v1/jobs", json={"spec": DIGITS_JOB}, headers=ADMIN).json()["id"]

    def sample(clock: int) -> Telemetry:
        return Telemetry(
            site="virginia", job_id=job_id, time=time.time(), kind="eval", clock=clock,
            accuracy=0.5,
        )  # fmt: skip

    bus.publish_telemetry([sample(1)], maxlen=1000)
    first = wait_for("the first sample's event", lambda: hub.last_id.split(":")[1] != "0", 10)
    assert first
    seen = hub.last_id
    bus.publish_telemetry([sample(2), sample(3)], maxlen=1000)
    wait_for(
        "two more events", lambda: int(hub.last_id.split(":")[1]) >= int(seen.split(":")[1]) + 2, 10
    )

    # Reconnecting with the last id seen replays what came after it, in order, with ids.
    resumed = read_events(api, 2, params={"job_id": job_id}, headers={"Last-Event-ID": seen})
    assert [e.name for e in resumed] == ["telemetry", "telemetry"]
    assert [e.data["clock"] for e in resumed] == [2, 3]
    assert all(e.id and e.id.startswith(hub.epoch + ":") for e in resumed)

    # An id from another process (a restarted control plane) cannot be resumed from.
    reset = read_events(api, 1, headers={"Last-Event-ID": "0000:5"})
    assert reset[0].name == "reset"

    # Quiet, the stream still says it is alive.
    quiet = read_events(api, 2, params={"job_id": "no-such-job"})
    assert [e.name for e in quiet] == ["heartbeat", "heartbeat"]
