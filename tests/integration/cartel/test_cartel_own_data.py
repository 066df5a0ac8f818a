"""A cartel job on the sites' own data (issue 13), and a cartel site that resumes.

Three real edge agents each hold their own share of digits (an npz folder, as `atoll data
split` writes it, 4 classes a site): a `data: site` cartel job streams each site's own
training set and scores it on its own test split; the control plane only matches the
schemas the sites reported. Killed with SIGKILL mid-job, a site is restarted by its agent
and goes on from its checkpoint, not from batch 0, and the job completes.
"""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from integration.cartel.support import cartel_stack, run_dir
from integration.control.harness import job_end, log_events, wait_for

from atoll.edge.cartel.checkpoint import load_checkpoint
from atoll.localstack.deployment import AgentSpec, LocalDeployment
from atoll.platform.control.client import ControlClient, ControlError
from atoll.platform.core.events import StepDone, TrainingStarted
from atoll.platform.data.schema import SCHEMAS, SiteData
from atoll.platform.data.split import split_to_folders
from atoll.platform.transfer.job import CartelJob, CartelSiteJob
from atoll.registry.client import RegistryClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SITES = ("alpha", "bravo", "charlie")
JOB: dict[str, Any] = {
    "kind": "cartel",
    "sites": list(SITES),
    "data": "site",
    "dataset": "digits",  # the schema the sites' data must have
    "model": "logreg",
    "batches": 300,
    "batch_size": 10,
    "batch_interval_s": 0.05,
    "eval_every": 10,
    "checkpoint_every": 10,
    "seed": 0,
}
JOB_S = 180


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SiteData]:
    root = tmp_path_factory.mktemp("cartel-data")
    return split_to_folders("digits", None, SITES, "label-skew:4", 0, root)


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, folders: dict[str, SiteData]
) -> Iterator[LocalDeployment]:
    agents = [AgentSpec(name, "local", data=folders[name]) for name in SITES]
    with cartel_stack(tmp_path_factory.mktemp("cartel-own"), agents) as deployment:
        yield deployment


def steps_done(stack: LocalDeployment, site: str, job_id: str) -> int:
    steps = log_events(run_dir(stack, site, job_id) / "log.jsonl", StepDone)
    return steps[-1].step if steps else 0


def test_each_site_streams_its_own_data_and_a_schema_mismatch_is_refused(
    stack: LocalDeployment, folders: dict[str, SiteData]
) -> None:
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        wait_for("every site's data report", lambda: all(s.data for s in client.sites().sites)
                 and len(client.sites().sites) == len(SITES), 120)  # fmt: skip
        with pytest.raises(ControlError) as refused:
            client.submit({**JOB, "data_schema": SCHEMAS["fashion-mnist"].model_dump()})
        job = job_end(client, client.submit({**JOB, "batches": 60}, name="own").id, JOB_S)
    assert "alpha, bravo, charlie hold data of another schema" in str(refused.value)
    assert job.state == "completed", job.message
    assert all(s.final_accuracy is not None and s.final_accuracy > 0 for s in job.sites)
    with RegistryClient(stack.registry_url, stack.admin_token) as registry:
        ids = {s.name: s.id for s in registry.iter_sites()}
        priors = {site: registry.latest_report(ids[site]).class_priors for site in SITES}
    for site in SITES:
        # What the site reported it saw is its own data's classes, and no others.
        held = set(np.load(folders[site].path)["y"].tolist())
        seen = {c for c, p in enumerate(priors[site]) if p > 0}
        assert seen and seen <= held, (site, seen, held)
        job_file = run_dir(stack, site, job.id).parent / "site-job.json"
        assert CartelSiteJob.load(job_file).data == folders[site]


def test_a_site_killed_mid_job_resumes_from_its_checkpoint(stack: LocalDeployment) -> None:
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        job_id = client.submit(JOB, name="resumes").id
        wait_for("bravo's batch 45", lambda: steps_done(stack, "bravo", job_id) >= 45, 120)
        agent_file = stack.root / "edge" / "bravo" / "state" / "agent.json"
        pid = json.loads(agent_file.read_text())["jobs"][job_id]["pid"]
        os.kill(pid, signal.SIGKILL)
        killed_at = steps_done(stack, "bravo", job_id)
        job = job_end(client, job_id, JOB_S)
    # Completed with bravo, not without it: a resumed site trains on at once.
    assert job.state == "completed" and job.message is None, job.message

    run = run_dir(stack, "bravo", job_id)
    starts = log_events(run / "log.jsonl", TrainingStarted)
    assert [s.step for s in starts][:1] == [0] and len(starts) == 2, starts
    resumed_at = starts[1].step
    # From its last checkpoint (every 10 batches) before the kill, not from 0.
    assert resumed_at % 10 == 0 and killed_at - 10 <= resumed_at <= killed_at, (
        resumed_at,
        killed_at,
    )
    after = [s.step for s in log_events(run / "log.jsonl", StepDone) if s.time > starts[1].time]
    assert after == list(range(resumed_at + 1, JOB["batches"] + 1))
    spec = CartelJob.model_validate(JOB)
    final = load_checkpoint(run, "resumes", "bravo", _signature(run))
    assert final is not None and final.step == spec.batches
    # Every batch counted once across the restart: the model's version went on.
    assert final.core.batches == spec.batches and final.core.samples == spec.batches * 10
    assert final.core.version >= spec.batches


def _signature(run: Path) -> str:
    starts = log_events(run / "log.jsonl", TrainingStarted)
    assert starts[0].model_signature is not None
    return starts[0].model_signature


def test_a_site_without_data_fails_an_own_data_job_at_start_with_one_line(
    tmp_path: Path,
) -> None:
    job = CartelJob.model_validate(JOB)
    site_job = CartelSiteJob(
        job_name="j", site="bravo", job=job, endpoints={s: "wss://127.0.0.1:1" for s in SITES}
    )
    path = tmp_path / "site-job.json"
    path.write_text(site_job.model_dump_json())
    done = subprocess.run(
        [sys.executable, "-m", "atoll.cli", "site", "run", "--job", str(path), "--out",
         str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [
        "atoll: error: bravo: the job streams each site's own data, and this site's site.yaml "
        "names none (add data:)"
    ], done.stderr
