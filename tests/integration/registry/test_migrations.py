"""Migrations: from empty on every backend, matching the models; the service refuses to run
on a database whose schema is not the one its code expects."""

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from integration.registry.service import ADMIN
from sqlalchemy import inspect

from atoll.localstack.registry import ServerProcess
from atoll.platform.net.ports import free_loopback_port
from atoll.platform.service.database import make_engine
from atoll.registry.migrate import SCHEMA
from atoll.registry.models import Base

pytestmark = pytest.mark.integration


def registry_command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m atoll.registry ARGS`, with no ATOLL_* variables but those in `env`."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ATOLL_")}
    return subprocess.run(
        [sys.executable, "-m", "atoll.registry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def tables(url: str) -> set[str]:
    engine = make_engine(url, pool_size=1)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_migrate_builds_the_schema_the_models_describe(empty_database: str) -> None:
    first = registry_command("migrate", "--database-url", empty_database)
    assert first.returncode == 0, first.stderr
    assert "migrated from empty to 0002" in first.stdout
    assert "already at 0002" in registry_command("migrate", "--database-url", empty_database).stdout
    assert tables(empty_database) == {*Base.metadata.tables, "alembic_version"}
    engine = make_engine(empty_database, pool_size=1)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    finally:
        engine.dispose()


def test_downgrade_and_upgrade_again(empty_database: str) -> None:
    SCHEMA.upgrade(empty_database)
    command.downgrade(SCHEMA.config(empty_database), "base")
    assert tables(empty_database) <= {"alembic_version"}
    before, after = SCHEMA.upgrade(empty_database)
    assert before.current == ()
    assert after.is_current


def test_the_service_refuses_an_unmigrated_database(empty_database: str) -> None:
    env = {"ATOLL_DATABASE_URL": empty_database, "ATOLL_ADMIN_TOKEN": ADMIN}
    refused = registry_command("serve", "--port", str(free_loopback_port()), env=env)
    assert refused.returncode == 2
    assert "has no schema yet; run `atoll registry migrate` first" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert tables(empty_database) <= {"alembic_version"}  # and it did not create one itself


def test_the_service_refuses_to_run_without_an_admin_token(empty_database: str) -> None:
    SCHEMA.upgrade(empty_database)
    env = {"ATOLL_DATABASE_URL": empty_database}
    refused = registry_command("serve", "--port", str(free_loopback_port()), env=env)
    assert refused.returncode == 2
    assert "ATOLL_ADMIN_TOKEN is not set" in refused.stderr


def test_serve_migrate_starts_on_an_empty_database(empty_database: str, tmp_path: Path) -> None:
    with ServerProcess(empty_database, ADMIN, tmp_path / "log", migrate=True) as server:
        assert httpx.get(f"{server.url}/readyz").json()["status"] == "ready"


def test_readiness_fails_when_the_schema_falls_behind(empty_database: str, tmp_path: Path) -> None:
    SCHEMA.upgrade(empty_database)
    with ServerProcess(empty_database, ADMIN, tmp_path / "log") as server:
        command.downgrade(SCHEMA.config(empty_database), "base")
        answer = httpx.get(f"{server.url}/readyz")
        assert answer.status_code == 503
        body = answer.json()
        assert body["status"] == "not_ready"
        assert body["schema_revision"] == []
        assert "run `atoll registry migrate`" in body["problem"]


def test_an_unreachable_database_is_one_clear_line() -> None:
    nowhere = "postgresql+psycopg://postgres@127.0.0.1:1/none"
    migrated = registry_command("migrate", "--database-url", nowhere)
    assert migrated.returncode == 2
    assert migrated.stderr.startswith("atoll: error: cannot migrate the registry database")
    served = registry_command(
        "serve", "--port", str(free_loopback_port()),
        env={"ATOLL_DATABASE_URL": nowhere, "ATOLL_ADMIN_TOKEN": ADMIN},
    )  # fmt: skip
    assert served.returncode == 2
    assert served.stderr.startswith("atoll: error: cannot use the registry database")
    assert "Traceback" not in migrated.stderr + served.stderr
