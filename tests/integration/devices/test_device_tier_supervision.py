"""The edge agent's device tier: it starts the site's SuperLink and the SuperExec that runs
Atoll's ServerApp; killed mid-job (kill -9), the SuperLink is started again, the
ServerApp reconnects, and the same run finishes; on the way out both are stopped."""

import os
import signal
import socket
import time
from pathlib import Path

import pytest
from devices_support import EXAMPLE, MODEL, start_supernodes

from atoll.edge.devices import DevicesConfig, DeviceTier
from atoll.platform.core.events import TrainingFinished, of_kind
from atoll.platform.core.runlog import read_events
from atoll.platform.devices.launch import FlowerSite, stop_process
from atoll.platform.devices.spec import DeviceSiteSpec
from atoll.platform.net.ports import free_loopback_port

pytestmark = [pytest.mark.integration, pytest.mark.flower, pytest.mark.timeout(420)]

DEVICES, ROUNDS = 2, 2
SMALL = {"max-train-samples": 100, "max-test-samples": 50}


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_superlink_killed_mid_job_is_restarted_and_the_job_finishes(
    fashion_mnist: Path, tmp_path: Path
) -> None:
    port = free_loopback_port()
    tier = DeviceTier(DevicesConfig(app=EXAMPLE, host="127.0.0.1", port=port), tmp_path)
    spec = DeviceSiteSpec(
        model=MODEL,
        rounds=ROUNDS,
        min_replies=1,
        poll_s=0.5,
        round_timeout_s=150,
        evaluate=False,
        out_dir=tmp_path / "run",
    )
    # What `atoll devices run --agent-state` does: a run on the agent's SuperLink.
    run = FlowerSite(spec, EXAMPLE, tier.site.superlink, tier.site.work)
    nodes = []
    try:
        tier.start()
        assert listening(port) and tier.site.superexec_alive()
        nodes = start_supernodes(tier.site.superlink.address, DEVICES, 2, tmp_path)
        run_id = run.start_run({"data-dir": str(fashion_mnist), **SMALL})
        deadline = time.monotonic() + 300
        while not run.rounds_done() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert run.rounds_done(), "round 1 did not end"
        time.sleep(2)  # round 2's messages are out
        first = tier.site._superlink
        assert first is not None
        os.kill(first.pid, signal.SIGKILL)  # the SuperLink dies mid-round, alone
        first.wait()
        while True:
            tier.supervise()  # what the agent does each turn of its loop
            if run.wait_step(deadline, poll_s=1.0):
                break
        assert tier.restarts == 1 and tier.site._superlink is not first
        assert run.run_id == run_id and run.status() == "finished:completed"
    finally:
        for node in nodes:
            stop_process(node)
        tier.stop()
    assert not tier.site.superlink_alive() and not tier.site.superexec_alive()
    assert not listening(port)
    assert (tmp_path / "devices" / "flower.db").exists()  # the state that outlived the kill

    events = read_events(spec.out_dir / "log.jsonl")
    done = [e for e in events if e.kind == "device_round"]
    # Every round once, each with at least one device, none applied twice.
    assert [d.round for d in done] == list(range(1, ROUNDS + 1))
    assert all(1 <= d.replied <= DEVICES and d.replied + len(d.silent) == d.devices for d in done)
    assert len(of_kind(events, TrainingFinished)) == 1
    assert (spec.out_dir / "model.npz").exists()
