import pytest

from atoll.platform.bus import AgentStatus, Command, JobReport, StartJob, Telemetry
from atoll.platform.bus.keys import BusKeys
from atoll.platform.data.schema import SCHEMAS, DataReport


def test_messages_round_trip_through_stream_fields() -> None:
    start = StartJob(
        job_name="j",
        site_job={"geo": {"site": "a"}},
        own_data=True,
        clocks=10,
    )
    command = Command(id="c1", site="a", kind="start_job", job_id="j1", issued_at=1.0, start=start)
    fields = command.encode()
    assert list(fields) == ["m"]
    assert Command.decode(fields) == command
    status = AgentStatus(
        site="a", incarnation="i", seq=1, time=2.0, state="running", region="r",
        geo_host="h", geo_port=1, geo_ports=1, version="v",
        data=DataReport(schema=SCHEMAS["digits"], samples=3, class_counts=(1, 2) + (0,) * 8),
        jobs=[JobReport(job_id="j1", state="running", clock=3, samples=3, params=7)],
    )  # fmt: skip
    assert AgentStatus.decode(status.encode()) == status
    sample = Telemetry(site="a", job_id="j1", time=1.0, kind="eval", clock=3, accuracy=0.5)
    assert Telemetry.decode(sample.encode()) == sample


def test_unknown_fields_and_bad_site_names_are_refused() -> None:
    with pytest.raises(ValueError):
        Command.model_validate({"id": "c", "site": "a", "kind": "drain", "issued_at": 0, "x": 1})
    with pytest.raises(ValueError):
        Command(id="c", site="no spaces", kind="drain", issued_at=0)


def test_keys_are_under_the_prefix() -> None:
    keys = BusKeys("test-1")
    assert keys.commands("a") == "test-1:commands:a"
    assert keys.alive.site_of(keys.alive("virginia")) == "virginia"
    assert {keys.status("a"), keys.telemetry("a")} == {"test-1:status:a", "test-1:telemetry:a"}
    assert keys.telemetry.pattern == "test-1:telemetry:*"
