"""The control plane's HTTP API with its background loops running against a real Redis: an
agent is played by writing to the bus directly."""

import secrets
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from integration.control.harness import DIGITS_JOB, control_api, served_control_api, wait_for
from pydantic import SecretStr

from atoll.platform.bus.connection import Bus
from atoll.platform.bus.messages import AgentStatus, Beat, Telemetry
from atoll.platform.control.core.config import ControlSettings
from atoll.platform.control.main import create_app
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.service.server import StartupRefused

with warnings.catch_warnings():  # starlette's own notice about its test client's transport
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration
ADMIN = "test-admin-" + secrets.token_hex(12)


@pytest.fixture
def api(tmp_path: Path, bus: Bus) -> Iterator[TestClient]:
    with control_api(tmp_path, bus, ADMIN) as client:
        yield client


def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


def agent(bus: Bus, site: str, seq: int = 1, state: str = "idle") -> None:
    """What an agent says about itself: a status report and a heartbeat."""
    status = AgentStatus(
        site=site, incarnation="test", seq=seq, time=time.time(), state=state, region="r",
        geo_host="127.0.0.1", geo_port=9400, geo_ports=1, version="test",
    )  # fmt: skip
    bus.publish_status(status)
    bus.beat(site, Beat(time=time.time(), state=state, incarnation="test"), ttl_s=30)


def test_writes_need_the_admin_token(api: TestClient) -> None:
    body = {"spec": DIGITS_JOB}
    assert api.post("/v1/jobs", json=body).status_code == 401
    wrong = {"Authorization": "Bearer " + "x" * 32}
    answer = api.post("/v1/jobs", json=body, headers=wrong)
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"
    assert api.post("/v1/sites/a/drain").status_code == 401
    assert api.get("/v1/jobs").status_code == 200  # reads are open


def test_a_bad_spec_is_refused_naming_the_field(api: TestClient) -> None:
    unknown = api.post("/v1/jobs", json={"spec": {**DIGITS_JOB, "colour": 1}}, headers=admin())
    assert unknown.status_code == 422
    assert unknown.json()["problems"][0]["field"] == "spec.colour"
    topology = api.post(
        "/v1/jobs", json={"spec": {**DIGITS_JOB, "topology": "moon"}}, headers=admin()
    )
    assert topology.status_code == 422
    assert "no topology 'moon'" in topology.json()["message"]
    partition = {**DIGITS_JOB, "partition": "dirichlet:-1"}
    assert api.post("/v1/jobs", json={"spec": partition}, headers=admin()).status_code == 422


def test_a_job_waits_for_its_sites_and_can_be_cancelled_once(api: TestClient) -> None:
    created = api.post("/v1/jobs", json={"spec": DIGITS_JOB, "name": "w1"}, headers=admin())
    assert created.status_code == 201, created.text
    job = created.json()
    assert job["state"] == "pending"
    assert job["name"] == "w1"
    assert [s["site"] for s in job["sites"]] == ["virginia", "frankfurt", "singapore"]
    waiting = wait_for(
        "the reason it waits",
        lambda: api.get(f"/v1/jobs/{job['id']}").json()["message"],
        10,
    )
    assert "virginia (no agent has joined as virginia)" in waiting
    assert [j["id"] for j in api.get("/v1/jobs", params={"state": "pending"}).json()["jobs"]] == [
        job["id"]
    ]
    cancelled = api.post(f"/v1/jobs/{job['id']}/cancel", headers=admin())
    assert cancelled.json()["state"] == "cancelled"
    again = api.post(f"/v1/jobs/{job['id']}/cancel", headers=admin())
    assert again.status_code == 409
    assert api.get("/v1/jobs/nope").status_code == 404
    assert api.get("/v1/jobs", params={"state": "lost"}).status_code == 422


def test_sites_join_by_reporting_go_offline_and_are_drained_through_their_stream(
    api: TestClient, bus: Bus
) -> None:
    agent(bus, "lab-a")
    site = wait_for(
        "lab-a to be online",
        lambda: (s := api.get("/v1/sites/lab-a")).status_code == 200 and s.json()["online"] and s,
        10,
    ).json()
    assert site["state"] == "active"
    assert site["geo_endpoint"] == "127.0.0.1:9400"
    drained = api.post("/v1/sites/lab-a/drain", headers=admin()).json()
    assert drained["state"] == "draining"
    command = wait_for(
        "the drain command on lab-a's stream",
        lambda: bus.read_commands("lab-a", block_ms=100),
        10,
    )[0][1]
    assert command.kind == "drain"
    assert command.site == "lab-a"
    # The dispatcher records a publish just after it reaches the bus, so the record may lag.
    listed = wait_for(
        "the drain's publish to be recorded",
        lambda: (
            (c := api.get("/v1/commands", params={"site": "lab-a"}).json()["commands"])
            and c[0]["publish_count"] == 1
            and c
        ),
        10,
    )
    assert listed[0]["kind"] == "drain"
    assert "payload" not in listed[0]
    assert api.post("/v1/sites/lab-a/activate", headers=admin()).json()["state"] == "active"
    assert api.delete("/v1/sites/lab-a", headers=admin()).json()["state"] == "removed"
    assert api.post("/v1/sites/lab-a/drain", headers=admin()).status_code == 409
    assert api.post("/v1/sites/nowhere/drain", headers=admin()).status_code == 404
    bus.redis.delete(bus.keys.alive("lab-a"))
    wait_for("lab-a to be offline", lambda: not api.get("/v1/sites/lab-a").json()["online"], 10)


def test_telemetry_streams_live_and_stays_as_history(tmp_path: Path, bus: Bus) -> None:
    with served_control_api(tmp_path, bus, ADMIN) as served:
        telemetry_streams_live_and_stays_as_history(served.client, bus)


def telemetry_streams_live_and_stays_as_history(api: httpx.Client, bus: Bus) -> None:
    job_id = api.post("/v1/jobs", json={"spec": DIGITS_JOB}, headers=admin()).json()["id"]
    received: list[str] = []

    def publish_until_heard() -> None:
        for clock in range(1, 40):
            if received:
                return
            sample = Telemetry(
                site="virginia", job_id=job_id, time=time.time(), kind="eval", clock=clock,
                accuracy=0.5,
            )  # fmt: skip
            bus.publish_telemetry([sample], maxlen=1000)
            time.sleep(0.25)

    publisher = threading.Thread(target=publish_until_heard, daemon=True)
    publisher.start()
    with api.stream("GET", "/v1/events", params={"job_id": job_id}) as stream:
        for line in stream.iter_lines():
            if line.startswith("event: telemetry"):
                received.append(line)
                break
    publisher.join()
    history = wait_for(
        "the samples in the history",
        lambda: api.get(f"/v1/jobs/{job_id}/telemetry").json()["samples"],
        10,
    )
    assert history[0]["site"] == "virginia"
    assert history[0]["accuracy"] == 0.5
    after = api.get(f"/v1/jobs/{job_id}/telemetry", params={"after": history[-1]["id"]})
    assert after.json()["next_after"] >= history[-1]["id"]


def test_probes_metrics_and_the_documented_schema(api: TestClient) -> None:
    ready = api.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["redis"] == "ok"
    assert api.get("/healthz").json() == {"status": "ok"}
    metrics = api.get("/metrics").text
    for name in ("atoll_control_jobs", "atoll_control_redis_up 1.0", "atoll_control_sites"):
        assert name in metrics
    schema = api.get("/openapi.json").json()
    paths = schema["paths"]
    for path in ("/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/cancel", "/v1/events",
                 "/v1/jobs/{job_id}/telemetry", "/v1/sites/{name}/drain", "/metrics"):  # fmt: skip
        assert path in paths, path
    assert "text/event-stream" in paths["/v1/events"]["get"]["responses"]["200"]["content"]
    geo_job = schema["components"]["schemas"]["GeoJob"]["properties"]
    assert geo_job["clocks"]["description"]
    assert geo_job["topology"]


def test_readiness_says_when_redis_is_away(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'control.db'}"
    SCHEMA.upgrade(url)
    settings = ControlSettings(
        database_url=url, admin_token=SecretStr(ADMIN), redis_url=SecretStr("redis://127.0.0.1:1/0")
    )
    with TestClient(create_app(settings)) as client:
        answer = client.get("/readyz")
        assert answer.status_code == 503
        assert "unreachable" in answer.json()["redis"]
        assert client.get("/v1/jobs").status_code == 200  # the state of record still answers


def test_the_service_refuses_to_start_without_a_token_or_a_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'control.db'}"
    with (
        pytest.raises(StartupRefused, match="no schema yet; run `atoll control migrate`"),
        TestClient(create_app(ControlSettings(database_url=url, admin_token=SecretStr(ADMIN)))),
    ):
        pass
    SCHEMA.upgrade(url)
    with (
        pytest.raises(StartupRefused, match="ATOLL_ADMIN_TOKEN is not set"),
        TestClient(create_app(ControlSettings(database_url=url, admin_token=None))),
    ):
        pass
