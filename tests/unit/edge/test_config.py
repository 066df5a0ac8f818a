from pathlib import Path

import pytest

from atoll.edge.config import load_edge_settings
from atoll.platform.core.errors import AtollError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


def test_the_file_says_what_the_site_is_and_variables_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "name: virginia\nregion: us-east-1\ngeo: {host: edge-a, port: 9400}\n")
    monkeypatch.setenv("ATOLL_GEO__PORT", "9500")
    monkeypatch.setenv("ATOLL_REDIS_URL", "redis://:secret@redis:6379/0")
    settings = load_edge_settings(path)
    assert (settings.name, settings.region) == ("virginia", "us-east-1")
    assert settings.geo.host == "edge-a"
    assert settings.geo.port == 9500
    assert settings.geo_endpoint == "ws://edge-a:9500"
    assert settings.redis_url.get_secret_value() == "redis://:secret@redis:6379/0"
    assert "secret" not in repr(settings)


def test_secrets_in_the_file_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "name: a\nadmin_token: hunter2hunter2hunter2\n")
    with pytest.raises(AtollError, match="secrets come from the environment"):
        load_edge_settings(path)


def test_a_bad_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AtollError, match="no agent configuration"):
        load_edge_settings(tmp_path / "missing.yaml")
    with pytest.raises(AtollError, match="name"):
        load_edge_settings(write(tmp_path, "region: x\n"))
    with pytest.raises(AtollError, match=r"geo\.port"):
        load_edge_settings(write(tmp_path, "name: a\ngeo: {port: 0}\n"))
