"""The control plane's tables on SQLite and on PostgreSQL: the migrations make exactly the
models' schema, and the state of record takes agents' reports idempotently and in order."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from support import NO_POSTGRES, postgres_url, require

from atoll.localstack.registry import postgres_schema
from atoll.platform.bus.messages import (
    AgentStatus,
    AppliedCommand,
    DeviceRound,
    DeviceTierReport,
    JobReport,
    Telemetry,
)
from atoll.platform.control.crud import commands as command_store
from atoll.platform.control.crud import jobs as job_store
from atoll.platform.control.crud import sites as site_store
from atoll.platform.control.crud import telemetry as telemetry_store
from atoll.platform.control.migrate import SCHEMA
from atoll.platform.control.models import Base, Command, Job, JobSite
from atoll.platform.service.database import Database
from atoll.platform.service.sql import utcnow

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'control.db'}"
        SCHEMA.upgrade(url)
        db = Database(url, pool_size=2)
        yield db
        db.dispose()
        return
    base = postgres_url()
    require(base is not None, NO_POSTGRES)
    assert base is not None
    with postgres_schema(base, "control") as url:
        SCHEMA.upgrade(url)
        db = Database(url, pool_size=2)
        yield db
        db.dispose()


def status(
    seq: int, *jobs: JobReport, incarnation: str = "i1", time: float = 100.0, **kw: object
) -> AgentStatus:
    return AgentStatus(
        site="a", incarnation=incarnation, seq=seq, time=time, state="running", region="r",
        geo_host="127.0.0.1", geo_port=9400, geo_ports=2, version="1", jobs=list(jobs), **kw,
    )  # fmt: skip


def make_job(db: Database, sites: tuple[str, ...] = ("a", "b"), state: str = "running") -> str:
    with db.writing() as session:
        job = job_store.create_job(session, None, {"clocks": 10}, sites, 1, 10, utcnow())
        job.state = state
        session.commit()
        return job.id


def test_the_migrations_make_the_models_schema_in_a_version_table_of_their_own(
    database: Database,
) -> None:
    with database.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": SCHEMA.version_table})
        tables = {t for t in Base.metadata.tables}
        diffs = [
            d
            for d in compare_metadata(context, Base.metadata)
            if not (d[0] == "remove_table" and d[1].name not in tables)
        ]
    assert diffs == []
    assert SCHEMA.state(database.engine).problem() is None


def test_a_status_report_updates_the_site_and_its_jobs_once(database: Database) -> None:
    job_id = make_job(database)
    report = JobReport(job_id=job_id, state="running", clock=5, accuracy=0.5, wan_bytes=100)
    with database.writing() as session:
        assert site_store.apply_status(session, status(1, report), utcnow())
        session.commit()
    with database.writing() as session:
        # The same report again, and an older one (Redis delivered them late): no change.
        assert not site_store.apply_status(session, status(1, report), utcnow())
        older = report.model_copy(update={"clock": 2})
        assert not site_store.apply_status(session, status(0, older), utcnow())
        # A new process of the agent whose clock says it reported before the last one.
        stale = status(1, older, incarnation="i0", time=50.0)
        assert not site_store.apply_status(session, stale, utcnow())
        session.commit()
    with database.reading() as session:
        part = session.get(JobSite, (job_id, "a"))
        assert (part.state, part.clock, part.accuracy, part.wan_bytes) == ("running", 5, 0.5, 100)
        site = site_store.get_site(session, "a")
        assert (site.geo_host, site.geo_ports, site.agent_state) == ("127.0.0.1", 2, "running")
        assert job_store.busy_sites(session) == {"a": job_id, "b": job_id}


def test_a_status_report_carries_the_sites_device_rounds_to_the_api(database: Database) -> None:
    from atoll.platform.control.api.routes.sites import _out

    one = DeviceRound(
        round=1, time=5.0, devices=3, replied=2, refused=0, dropped=1, examples=400,
        seconds=12.5, accuracy=0.61,
    )  # fmt: skip
    tier = DeviceTierReport(superlink="0.0.0.0:9092", up=True, restarts=1, rounds=[one])
    with database.writing() as session:
        assert site_store.apply_status(session, status(1, devices=tier), utcnow())
        session.commit()
    with database.reading() as session:
        out = _out(site_store.get_site(session, "a"), None)
    assert out.devices == tier
    with database.writing() as session:  # an agent whose site file no longer has devices
        assert site_store.apply_status(session, status(2), utcnow())
        session.commit()
    with database.reading() as session:
        assert _out(site_store.get_site(session, "a"), None).devices is None


def test_applied_commands_are_settled_and_a_refused_start_fails_that_site(
    database: Database,
) -> None:
    job_id = make_job(database)
    with database.writing() as session:
        for part in job_store.job_sites(session, job_id):
            part.state = "assigned"
        start = command_store.issue(session, "a", "start_job", utcnow(), job_id, {})
        drain = command_store.issue(session, "a", "drain", utcnow())
        ids = (start.id, drain.id)
        session.commit()
    applied = [
        AppliedCommand(id=ids[0], kind="start_job", outcome="refused", detail="busy", at=1.0),
        AppliedCommand(id=ids[1], kind="drain", outcome="applied", at=1.0),
    ]
    with database.writing() as session:
        site_store.apply_status(session, status(1, applied=applied), utcnow())
        session.commit()
    with database.reading() as session:
        assert [session.get(Command, i).state for i in ids] == ["refused", "applied"]
        assert command_store.open_commands(session) == []
        part = session.get(JobSite, (job_id, "a"))
        assert part.state == "failed"
        assert "busy" in part.message


def test_telemetry_goes_to_the_history_and_the_sites_progress(database: Database) -> None:
    job_id = make_job(database)
    samples = [
        Telemetry(site="a", job_id=job_id, time=1.0, kind="step", clock=1, loss=2.0),
        Telemetry(site="a", job_id=job_id, time=2.0, kind="eval", clock=2, accuracy=0.4),
        Telemetry(site="a", job_id="unknown", time=2.0, kind="eval", clock=2, accuracy=0.9),
        Telemetry(site="a", job_id=job_id, time=1.5, kind="geo", clock=1, wan_bytes=10),  # late
    ]
    with database.writing() as session:
        telemetry_store.record(session, samples, utcnow())
        telemetry_store.set_cursor(session, "telemetry", "epoch/1-0")
        session.commit()
    with database.reading() as session:
        rows = telemetry_store.history(session, job_id, 0, None, None, 10)
        assert [r.kind for r in rows] == ["step", "eval", "geo"]
        evals = telemetry_store.history(session, job_id, rows[0].id, "a", "eval", 10)
        assert [r.kind for r in evals] == ["eval"]
        part = session.get(JobSite, (job_id, "a"))
        assert (part.clock, part.accuracy, part.wan_bytes) == (2, 0.4, 0)  # the late one is older
        assert telemetry_store.get_cursor(session, "telemetry") == "epoch/1-0"


def test_jobs_list_newest_first_and_pending_ones_hold_no_site(database: Database) -> None:
    first = make_job(database, ("a",), state="pending")
    second = make_job(database, ("a",), state="completed")
    with database.reading() as session:
        assert [j.id for j in job_store.list_jobs(session, None, 10)] == [second, first]
        assert [j.id for j in job_store.jobs_in(session, ["pending"])] == [first]
        assert job_store.busy_sites(session) == {}
        assert session.get(Job, first).name.startswith("job-")
