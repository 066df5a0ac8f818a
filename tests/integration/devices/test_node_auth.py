"""Flower node authentication on a device site (which Flower allows only over TLS): a
SuperNode whose public key the site registered joins; one whose key it did not is refused."""

import time
from pathlib import Path

import pytest
from devices_support import EXAMPLE

from atoll.platform.devices.flower import (
    FlowerTls,
    SuperLinkOptions,
    SuperNodeOptions,
    register_node,
    write_node_keys,
)
from atoll.platform.devices.launch import FlowerSite, start_supernode, stop_process
from atoll.platform.devices.spec import DeviceSiteSpec
from atoll.platform.net.certs import write_job_certificates
from atoll.platform.net.ports import free_loopback_port

pytestmark = [pytest.mark.integration, pytest.mark.flower, pytest.mark.timeout(300)]

JOINED = "SuperNode ID:"  # what a SuperNode logs once the SuperLink took it


def test_only_registered_supernodes_join(tmp_path: Path) -> None:
    spec = DeviceSiteSpec(model="-", out_dir=tmp_path / "site")
    certs = write_job_certificates(tmp_path / "tls", ["superlink"])["superlink"]
    tls = FlowerTls(certs.ca_file, certs.cert_file, certs.key_file)
    options = SuperLinkOptions(free_loopback_port(), tls=tls, node_auth=True)
    site = FlowerSite(spec, EXAMPLE, options, tmp_path / "flower")
    registered_key, registered_pub = write_node_keys(tmp_path / "keys", "registered")
    stranger_key, _ = write_node_keys(tmp_path / "keys", "stranger")
    logs = {"registered": tmp_path / "registered.log", "stranger": tmp_path / "stranger.log"}
    nodes = []
    try:
        site.start_superlink()
        register_node(site.home, registered_pub)
        for name, key in (("registered", registered_key), ("stranger", stranger_key)):
            node = SuperNodeOptions(
                options.address,
                free_loopback_port(),
                root_certificates=tls.ca_cert,
                private_key=key,
            )
            nodes.append(start_supernode(node, logs[name]))
        deadline = time.monotonic() + 180
        while JOINED not in logs["registered"].read_text() and time.monotonic() < deadline:
            time.sleep(1)
        time.sleep(10)  # the stranger has had as long, and more
    finally:
        for node in nodes:
            stop_process(node)
        site.stop()
    assert JOINED in logs["registered"].read_text()
    assert JOINED not in logs["stranger"].read_text()
    # ...because the SuperLink refused its key, not because it never got through.
    superlink_log = (site.work / "superlink.log").read_text()
    assert "[/v1/fleet/activate-node][ApiError:2004] Attempted to register SuperNode" in (
        superlink_log
    )
