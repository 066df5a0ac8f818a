"""The device code path on the CPU, as CI runs it: an explicit `cpu` site, and bf16
autocast (which PyTorch also runs on CPUs) through the same functions a GPU site uses."""

from pathlib import Path

import pytest
import torch
from integration.site.jobs import SMALL_DIGITS_JOB

from atoll.platform.site.run import train_site
from atoll.platform.site.spec import SiteJob

pytestmark = pytest.mark.integration
JOB = {**SMALL_DIGITS_JOB, "steps": 60, "device": "cpu"}


def test_bf16_autocast_trains_through_the_same_path(tmp_path: Path) -> None:
    fp32 = train_site(SiteJob(**JOB), tmp_path / "fp32")
    bf16 = train_site(SiteJob(**JOB, bf16=True), tmp_path / "bf16")
    assert fp32["status"] == bf16["status"] == "completed"
    assert bf16["test_accuracy"] > 0.6
    assert abs(bf16["test_accuracy"] - fp32["test_accuracy"]) < 0.1
    a = torch.load(tmp_path / "fp32" / "model.pt", weights_only=True)
    b = torch.load(tmp_path / "bf16" / "model.pt", weights_only=True)
    assert any(not torch.equal(a[k], b[k]) for k in a)  # autocast did take effect
    assert all(v.dtype == torch.float32 for v in b.values())  # the weights stay fp32
