"""The site tier on CUDA: `pytest -m gpu tests/gpu` on a machine with a GPU (skipped where
there is none). The same functions run on the CPU in every other test."""

from pathlib import Path

import pytest
import torch

from atoll.platform.data.datasets import load_dataset
from atoll.platform.site.reference import train_single_process
from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.integration,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]


def test_bsp_on_gpus_matches_one_process_on_the_cpu(tmp_path: Path) -> None:
    workers = min(2, torch.cuda.device_count())
    job = SiteJob(
        dataset="digits", model="cnn", workers=workers, shards=workers, batch_size=16,
        steps=20, device="cuda", threads=1,
    )  # fmt: skip
    summary = train_site(job, tmp_path / "run")
    assert summary["status"] == "completed"
    weights = torch.load(tmp_path / "run" / "model.pt", weights_only=True)
    reference = train_single_process(job, load_dataset("digits").train, 20).model
    # Same math in another order of float operations: close, not bit-equal.
    for name, value in reference.state_dict().items():
        assert torch.allclose(weights[name], value, atol=1e-4), name


@pytest.mark.parametrize("bf16", [False, True])
def test_a_short_fashion_mnist_job_learns_on_a_gpu(tmp_path: Path, bf16: bool) -> None:
    job = SiteJob(
        dataset="fashion-mnist", model="cnn", workers=1, batch_size=64, steps=300,
        device="cuda", bf16=bf16, eval_samples=1000,
    )  # fmt: skip
    summary = train_site(job, tmp_path / "run")
    assert summary["status"] == "completed"
    assert summary["test_accuracy"] > 0.75
