"""K workers with batch b compute what one process computes with batch K*b."""

from pathlib import Path

import pytest
import torch

from atoll.platform.data.datasets import load_dataset
from atoll.platform.model.optim import OptimizerSpec
from atoll.platform.site import cluster
from atoll.platform.site.reference import train_single_process
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

pytestmark = pytest.mark.integration
STEPS = 20
OPTIMIZERS = {
    "sgd": OptimizerSpec(name="sgd", lr=0.05, momentum=0.9, weight_decay=1e-4),
    "adam": OptimizerSpec(name="adam", lr=0.002),
}


def site_weights(tmp_path: Path, **job: object) -> dict[str, torch.Tensor]:
    out = tmp_path / "run"
    summary = train_site(SiteJob(**job), out)
    # The single-host spawner's CPU ranks exchange through shared memory; torchrun's ranks
    # (test_torchrun.py) through the process group: both must match the reference.
    assert summary["exchange"] == "shared memory"
    return torch.load(out / "model.pt", weights_only=True)


def max_difference(weights: dict[str, torch.Tensor], model: torch.nn.Module) -> float:
    return max(float((weights[k] - v).abs().max()) for k, v in model.state_dict().items())


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize(("shards", "dedicated"), [(1, False), (2, False), (3, False), (2, True)])
def test_two_workers_match_one_process_with_double_batch(
    tmp_path: Path, optimizer: str, shards: int, dedicated: bool
) -> None:
    job = {
        "dataset": "digits",
        "model": "cnn",
        "workers": 2,
        "shards": shards,
        "dedicated_shards": dedicated,
        "batch_size": 16,
        "optimizer": OPTIMIZERS[optimizer],
        "steps": STEPS,
        "threads": 1,
    }
    weights = site_weights(tmp_path, **job)
    reference = train_single_process(SiteJob(**job), load_dataset("digits").train, STEPS)
    initial = train_single_process(SiteJob(**job), load_dataset("digits").train, 0)
    assert max_difference(weights, reference.model) < 1e-5
    assert max_difference(weights, initial.model) > 1e-3  # it did train


def test_result_does_not_depend_on_the_number_of_shards(tmp_path: Path) -> None:
    job = {"dataset": "digits", "workers": 2, "batch_size": 8, "steps": 10, "threads": 1}
    one = site_weights(tmp_path / "a", shards=1, **job)
    four = site_weights(tmp_path / "b", shards=4, dedicated_shards=True, **job)
    assert max(float((one[k] - four[k]).abs().max()) for k in one) < 1e-6


def test_shared_memory_and_the_process_group_train_the_same_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where /dev/shm is missing the spawner's ranks fall back to the process group; what
    carries the slices must not change a bit of the result."""
    job = SiteJob(dataset="digits", workers=2, shards=2, batch_size=8, steps=10, threads=1)
    shared = train_site(job, tmp_path / "shared")
    monkeypatch.setattr(cluster, "_SHARED_MEMORY", tmp_path / "no-such-folder")
    fallback = train_site(job, tmp_path / "fallback")
    assert (shared["exchange"], fallback["exchange"]) == ("shared memory", "process group")
    one, two = (
        torch.load(tmp_path / d / "model.pt", weights_only=True) for d in ("shared", "fallback")
    )
    for name, value in one.items():
        assert torch.equal(value, two[name]), name
