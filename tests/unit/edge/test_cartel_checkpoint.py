from pathlib import Path

import numpy as np
import pytest
import torch

from atoll.edge.cartel.checkpoint import FILE, SiteCheckpoint, load_checkpoint
from atoll.platform.core.errors import AtollError
from atoll.platform.transfer.config import CartelConfig
from atoll.platform.transfer.core import BatchScored, CartelSite
from atoll.platform.transfer.models import OnlineModel


def checkpoint(step: int = 7) -> SiteCheckpoint:
    model = OnlineModel("logreg", (1, 8, 8), 10, seed=0)
    core = CartelSite("bravo", CartelConfig(), 10, model.signature, model.shapes())
    for t in range(step):
        core.handle(BatchScored(float(t), [1, 2, 3], [True, False, True]))
    return SiteCheckpoint(
        job_name="j",
        site="bravo",
        signature=model.signature,
        step=step,
        core=core.snapshot(),
        sampler_rng=np.random.default_rng(3).bit_generator.state,
        lineage_parent="3f6c",
        model=model.module.state_dict(),
        optimizer=model.optimizer.state_dict(),
    )


def test_a_checkpoint_reads_back_as_it_was_written(tmp_path: Path) -> None:
    saved = checkpoint()
    saved.save(tmp_path)
    found = load_checkpoint(tmp_path, "j", "bravo", saved.signature)
    assert found is not None
    assert (found.step, found.core, found.lineage_parent) == (7, saved.core, "3f6c")
    assert found.sampler_rng == saved.sampler_rng
    assert all(torch.equal(found.model[k], v) for k, v in saved.model.items())
    assert not list(tmp_path.glob("*.tmp"))  # written atomically: nothing left over


@pytest.mark.parametrize(
    ("job", "site", "signature", "problem"),
    [
        ("other", "bravo", None, "is bravo's checkpoint of job j"),
        ("j", "alpha", None, "not alpha's of j"),
        ("j", "bravo", "cnn:x", r"not bravo's of j \(cnn:x\)"),
    ],
)
def test_a_checkpoint_of_another_job_site_or_model_is_refused(
    tmp_path: Path, job: str, site: str, signature: str | None, problem: str
) -> None:
    saved = checkpoint()
    saved.save(tmp_path)
    with pytest.raises(AtollError, match=problem):
        load_checkpoint(tmp_path, job, site, signature or saved.signature)


def test_no_checkpoint_is_none_and_a_torn_one_names_the_file(tmp_path: Path) -> None:
    assert load_checkpoint(tmp_path, "j", "bravo", "logreg:x") is None
    (tmp_path / FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(AtollError, match=f"{FILE}: unreadable checkpoint"):
        load_checkpoint(tmp_path, "j", "bravo", "logreg:x")
