"""The Flower commands a device site runs, and the app copy it submits."""

import tomllib
from pathlib import Path

import pytest

from atoll.platform.devices.flower import (
    SERVER_APP,
    FlowerError,
    FlowerTls,
    SuperLinkOptions,
    SuperNodeOptions,
    site_app,
    superexec_command,
    superlink_command,
    supernode_command,
    write_flower_home,
)

EXAMPLE = Path(__file__).parents[3] / "examples" / "fashion-mnist-flower"


def test_the_superlink_installs_nothing_and_is_insecure_only_when_asked() -> None:
    cmd = superlink_command(SuperLinkOptions(9092))
    assert "--disable-runtime-dependency-installation" in cmd
    assert cmd[cmd.index("--port") + 1] == "9092"
    assert "--insecure" in cmd
    tls = FlowerTls(Path("ca.pem"), Path("s.pem"), Path("s.key"))
    secure = superlink_command(SuperLinkOptions(9092, tls=tls, node_auth=True))
    assert "--insecure" not in secure
    assert secure[secure.index("--ssl-certfile") + 1] == "s.pem"
    assert "--enable-supernode-auth" in secure


def test_the_superexec_is_atolls_own_process_and_shares_a_secret_with_the_superlink() -> None:
    # Its own process (`--isolation process`), so a ServerApp outlives a SuperLink restart.
    options = SuperLinkOptions(9092, "0.0.0.0", superexec_secret=Path("secret"))
    link = superlink_command(options)
    assert link[link.index("--isolation") + 1] == "process"
    assert link[link.index("--superexec-auth-secret-file") + 1] == "secret"
    exec_ = superexec_command(options)
    assert exec_[exec_.index("--runtime-api-address") + 1] == "127.0.0.1:9092"
    assert exec_[exec_.index("--superexec-auth-secret-file") + 1] == "secret"
    assert "--insecure" in exec_
    tls = FlowerTls(Path("ca.pem"), Path("s.pem"), Path("s.key"))
    secure = superexec_command(SuperLinkOptions(9092, "10.0.0.5", tls))
    assert secure[secure.index("--root-certificates") + 1] == "ca.pem"
    assert "--insecure" not in secure and "--superexec-auth-secret-file" not in secure


def test_a_supernode_gets_its_own_port_node_config_and_key() -> None:
    options = SuperNodeOptions(
        "site:9092", 9111, {"partition-id": 2, "name": "ward b"}, Path("ca.pem"), Path("k")
    )
    cmd = supernode_command(options)
    assert cmd[cmd.index("--port") + 1] == "9111"
    assert cmd[cmd.index("--node-config") + 1] == 'partition-id=2 name="ward b"'
    assert cmd[cmd.index("--root-certificates") + 1] == "ca.pem"
    assert cmd[cmd.index("--auth-supernode-private-key") + 1] == "k"


def test_the_site_app_keeps_the_client_app_and_runs_atolls_server_app(tmp_path: Path) -> None:
    copy = site_app(EXAMPLE, tmp_path / "app", tmp_path / "site.json")
    app = tomllib.loads((copy / "pyproject.toml").read_text())["tool"]["flwr"]["app"]
    assert app["components"] == {
        "serverapp": SERVER_APP,
        "clientapp": "fmnist_flower.client_app:app",
    }
    assert app["config"]["atoll-site"] == str((tmp_path / "site.json").resolve())
    client = (copy / "fmnist_flower" / "client_app.py").read_text()
    assert client == (EXAMPLE / "fmnist_flower" / "client_app.py").read_text()
    assert "atoll" not in client


def test_a_folder_that_is_no_flower_app_is_refused(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(FlowerError, match="is no Flower app"):
        site_app(tmp_path / "app", tmp_path / "copy", tmp_path / "site.json")


def test_the_flower_home_names_the_site_superlink(tmp_path: Path) -> None:
    write_flower_home(tmp_path, SuperLinkOptions(9092, "10.0.0.5"))
    config = tomllib.loads((tmp_path / "config.toml").read_text())
    assert config["superlink"]["default"] == "site"
    assert config["superlink"]["site"] == {"address": "10.0.0.5:9092", "insecure": True}


def test_the_example_app_imports_nothing_from_atoll() -> None:
    for source in (EXAMPLE / "fmnist_flower").glob("*.py"):
        assert "atoll" not in source.read_text(), source


def test_a_site_file_with_devices_gives_the_agent_its_superlink(tmp_path: Path) -> None:
    from atoll.edge.config import load_edge_settings

    site = tmp_path / "site.yaml"
    site.write_text(
        "name: ward\ndevices:\n  app: /opt/app\n  port: 9300\n  tls_dir: /tls\n  node_auth: true\n"
    )
    devices = load_edge_settings(site).devices
    assert devices is not None
    options = devices.superlink(tmp_path)
    assert options.address == "0.0.0.0:9300"
    assert options.tls is not None and options.tls.cert == Path("/tls/superlink.pem")
    assert options.node_auth
    assert options.database == tmp_path / "flower.db"  # registered nodes survive a restart


def test_a_site_file_without_devices_runs_no_superlink(tmp_path: Path) -> None:
    from atoll.edge.config import load_edge_settings

    site = tmp_path / "site.yaml"
    site.write_text("name: plain\n")
    assert load_edge_settings(site).devices is None
