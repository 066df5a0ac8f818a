import numpy as np
import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.site.batches import BatchPlan


def test_k_workers_with_batch_b_see_what_one_process_with_batch_kb_sees() -> None:
    site = BatchPlan(num_samples=1000, batch_per_worker=16, workers=3, seed=5)
    single = BatchPlan(num_samples=1000, batch_per_worker=48, workers=1, seed=5)
    for step in (0, 1, 19, 20, 45):  # 20 steps per epoch: crosses epoch boundaries
        together = np.concatenate([site.indices(step, w) for w in range(3)])
        assert np.array_equal(together, single.indices(step, 0))


def test_workers_get_disjoint_batches_and_an_epoch_visits_each_sample_at_most_once() -> None:
    plan = BatchPlan(num_samples=100, batch_per_worker=8, workers=2, seed=0)
    seen = np.concatenate([plan.indices(s, w) for s in range(plan.steps_per_epoch) for w in (0, 1)])
    assert len(seen) == len(np.unique(seen)) == 96  # the last partial batch is dropped


def test_each_epoch_is_reshuffled_and_the_same_seed_repeats_it() -> None:
    plan = BatchPlan(num_samples=100, batch_per_worker=10, workers=1, seed=0)
    assert not np.array_equal(plan.indices(0, 0), plan.indices(10, 0))
    again = BatchPlan(num_samples=100, batch_per_worker=10, workers=1, seed=0)
    assert np.array_equal(plan.indices(13, 0), again.indices(13, 0))
    assert plan.epoch_of(9) == 0
    assert plan.epoch_of(10) == 1


def test_too_few_samples_for_one_batch_is_refused() -> None:
    with pytest.raises(AtollError, match="fewer than one global batch of 64"):
        BatchPlan(num_samples=50, batch_per_worker=32, workers=2, seed=0)
