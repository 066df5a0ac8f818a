from pathlib import Path

import pytest

from atoll.platform.service.security import hash_token
from atoll.registry.core.config import RegistrySettings


def test_the_default_database_is_a_sqlite_file_under_the_state_dir(tmp_path: Path) -> None:
    settings = RegistrySettings(state_dir=tmp_path)
    assert settings.resolved_database_url == f"sqlite:///{tmp_path}/registry.db"


def test_settings_come_from_atoll_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOLL_DATABASE_URL", "postgresql+psycopg://u@h/db")
    monkeypatch.setenv("ATOLL_LIVENESS_WINDOW_S", "60")
    monkeypatch.setenv("ATOLL_REPORT_RETENTION", "7")
    settings = RegistrySettings()
    assert settings.resolved_database_url == "postgresql+psycopg://u@h/db"
    assert (settings.liveness_window_s, settings.report_retention) == (60, 7)


def test_several_admin_tokens_allow_rotating_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOLL_ADMIN_TOKEN", "old-admin-token-0001, new-admin-token-0002")
    settings = RegistrySettings()
    assert settings.admin_tokens == ["old-admin-token-0001", "new-admin-token-0002"]
    assert hash_token("new-admin-token-0002") in settings.admin_token_hashes
    assert settings.admin_token_problem() is None


@pytest.mark.parametrize(
    ("value", "problem"), [(None, "is not set"), ("", "is not set"), ("short", "at least 16")]
)
def test_a_missing_or_weak_admin_token_is_a_problem(value: str | None, problem: str) -> None:
    assert problem in (RegistrySettings(admin_token=value).admin_token_problem() or "")
