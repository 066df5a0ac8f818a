"""Cartel through the real system (issue 13): a cartel job submitted to the control plane,
run by three real edge agents that report to the real registry and fetch parts from each
other over their authenticated site-to-site links.

bravo's stream drifts to alpha's mix at batch 80 (it starts seeing classes 0 and 1,
which only alpha and, farther off, charlie know): bravo must fetch from alpha, the
nearest neighbour, and recover; with alpha dead, from charlie; with the registry down,
it trains alone and reports again once the registry is back.
"""

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from integration.cartel.support import cartel_stack, run_dir
from integration.control.harness import job_end, log_events, wait_for

from atoll.localstack.deployment import AgentSpec, LocalDeployment
from atoll.platform.control.client import ControlClient, ControlError
from atoll.platform.core.events import CartelNoted, CartelTransferred, Evaluated, StepDone
from atoll.registry.client import RegistryClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ONSET = 80  # the scenario's drift: batches // 3
JOB: dict[str, Any] = {
    "kind": "cartel",
    "sites": ["alpha", "bravo", "charlie"],
    # Stream i mostly sees classes 2i..2i+3 (mod 10): alpha 0-3, bravo 2-5 (then alpha's
    # 0-3), charlie 8,9,0,1: good on bravo's new classes too, but farther from its mix.
    "streams": {"alpha": 0, "bravo": 1, "charlie": 4},
    "scenario": "class-emergence",
    "dataset": "digits",
    "model": "logreg",
    "batches": 240,
    "batch_size": 10,
    # Paced for a loaded CI host: a transfer (a registry query, then a fetch over the
    # links) took 0.35 s there, 7 batches at 0.05 s; and the registry's restart takes seconds.
    "batch_interval_s": 0.15,
    "seed": 0,
    # A small logistic regression on digits is good, not great, on a class after 80 batches
    # of 10: a neighbour 60% right on bravo's new classes beats bravo's 0%.
    "cartel": {"min_neighbour_accuracy": 0.6},
}
JOB_S = 240


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    agents = [AgentSpec(name, "local") for name in JOB["sites"]]
    with cartel_stack(tmp_path_factory.mktemp("cartel"), agents) as deployment:
        yield deployment


def site_log(stack: LocalDeployment, site: str, job_id: str) -> Path:
    return run_dir(stack, site, job_id) / "log.jsonl"


def notes(path: Path, happening: str) -> list[CartelNoted]:
    return [n for n in log_events(path, CartelNoted) if n.happening == happening]


def bravo_step(stack: LocalDeployment, job_id: str) -> int:
    steps = log_events(site_log(stack, "bravo", job_id), StepDone)
    return steps[-1].step if steps else 0


def mean_accuracy(evals: list[Evaluated], first: int, last: int) -> float:
    chosen = [e.test_accuracy for e in evals if first <= e.step <= last]
    assert chosen, f"no evaluation between batches {first} and {last}"
    return sum(chosen) / len(chosen)


def test_a_drifting_site_fetches_from_its_nearest_neighbour_and_recovers(
    stack: LocalDeployment,
) -> None:
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        job = job_end(client, client.submit(JOB, name="cartel-recovers").id, JOB_S)
    assert job.state == "completed", job.message
    assert all(s.final_accuracy is not None for s in job.sites)

    bravo = site_log(stack, "bravo", job.id)
    # (The detector may also fire on noise before the onset: batches of 10 are noisy.)
    drift = [d for d in notes(bravo, "drift") if d.step > ONSET]
    assert drift and drift[0].step <= ONSET + 10, notes(bravo, "drift")
    assert set(drift[0].classes) & {0, 1}, drift[0]
    transfer = next(t for t in log_events(bravo, CartelTransferred) if t.step >= drift[0].step)
    assert transfer.step <= drift[0].step + 5, transfer
    assert transfer.source == "alpha"  # the nearest by Jensen-Shannon, and good on 0, 1
    # The rows of the drifted classes, and of the others it has seen since the drift.
    assert transfer.part == "rows" and set(drift[0].classes) <= set(transfer.classes)
    assert 0 < transfer.bytes < 10_000  # the rows asked for, not the model

    # Recovered within 10 batches: back near its accuracy before the drift, on its new mix
    # (alone, it takes about 90).
    evals = log_events(bravo, Evaluated)
    before = mean_accuracy(evals, ONSET - 10, ONSET)
    after = mean_accuracy(evals, transfer.step + 5, transfer.step + 10)
    print(f"bravo: {before:.2f} before the drift, {after:.2f} after the transfer")
    assert after >= before - 0.1

    # The transfer is the registry's lineage: bravo's new model from alpha's part.
    with RegistryClient(stack.registry_url, stack.admin_token) as registry:
        ids = {s.name: s.id for s in registry.iter_sites()}
        models = registry.list_models(job="cartel-recovers").models
    from_alpha = [m for m in models if m.uri.startswith("atoll-cartel://alpha/")]
    assert from_alpha and from_alpha[-1].sites == [ids["bravo"]], models


def test_a_bad_kind_or_site_list_is_refused(stack: LocalDeployment) -> None:
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        with pytest.raises(ControlError) as kind:
            client.submit({**JOB, "kind": "gossip"})
        with pytest.raises(ControlError) as repeated:
            client.submit({**JOB, "sites": ["alpha", "alpha"], "streams": None})
    assert "a job's kind is geo (the default) or cartel" in str(kind.value)
    assert "repeat a name" in str(repeated.value)


def test_with_the_registry_down_sites_train_alone_and_catch_up(stack: LocalDeployment) -> None:
    assert stack.registry is not None
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        job_id = client.submit(JOB, name="cartel-registry-down").id
        wait_for("bravo's batch 50", lambda: bravo_step(stack, job_id) >= 50, 120)
        stack.registry.stop()
        down_at = bravo_step(stack, job_id)
        # bravo drifts while the registry is away: it cannot ask, and trains on alone.
        wait_for("bravo's batch 110", lambda: bravo_step(stack, job_id) >= 110, 60)
        back = time.time()  # from here on (a site may reach it before the test sees it ready)
        stack.start_registry()
        job = job_end(client, job_id, JOB_S)
    assert job.state == "completed", job.message
    bravo = site_log(stack, "bravo", job_id)
    steps = [s for s in log_events(bravo, StepDone) if s.step > down_at]
    assert len(steps) >= 40  # it never stopped training
    assert notes(bravo, "registry-down")
    assert not log_events(bravo, CartelTransferred)  # no neighbours without the registry
    assert any(n.time > back for n in notes(bravo, "registry-up"))
    with RegistryClient(stack.registry_url, stack.admin_token) as registry:
        bravo_id = next(s.id for s in registry.iter_sites() if s.name == "bravo")
        latest = registry.latest_report(bravo_id)
    assert latest.created_at.timestamp() > back  # caught up: it reports again


def test_a_dead_neighbour_is_given_up_for_the_next_while_training_goes_on(
    stack: LocalDeployment,
) -> None:
    """alpha dies before bravo drifts, and the registry still lists it as live: bravo asks
    alpha, gets no answer, asks charlie, and trains all along."""
    with ControlClient(stack.control_url, stack.admin_token, retries=10) as client:
        job_id = client.submit(JOB, name="cartel-neighbour-dies").id
        wait_for("bravo's batch 65", lambda: bravo_step(stack, job_id) >= 65, 120)
        alpha = stack.agents["alpha"]
        alpha.signal(signal.SIGKILL)  # the agent, and with it its site
        alpha.kill_group()
        bravo = site_log(stack, "bravo", job_id)
        wait_for(
            "bravo's transfer",
            lambda: log_events(bravo, CartelTransferred) or notes(bravo, "gave-up"),
            90,
        )
        client.cancel(job_id)
    stack.start_agent("alpha")  # for whatever runs next on this stack

    # (A drift on noise before the onset may have met a neighbour that declined.)
    silent = [n for n in notes(bravo, "fetch-failed") if n.sites == ["alpha"] and n.step > ONSET]
    assert silent, notes(bravo, "fetch-failed")
    assert "no answer" in silent[0].message or "link lost" in silent[0].message, silent
    transfer = next(t for t in log_events(bravo, CartelTransferred) if t.step > ONSET)
    assert transfer.source == "charlie", notes(bravo, "gave-up")
    # It went on training while it waited for alpha.
    gave_up_at = silent[0].time
    trained = [s for s in log_events(bravo, StepDone) if gave_up_at - 2 < s.time < gave_up_at]
    assert len(trained) >= 5, trained
