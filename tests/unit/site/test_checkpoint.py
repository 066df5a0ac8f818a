import itertools
from pathlib import Path

import pytest
import torch

from atoll.platform.core.errors import AtollError
from atoll.platform.site.checkpoint import CheckpointStore


def save_step(store: CheckpointStore, step: int, cuts: list[int], values: torch.Tensor) -> None:
    for shard, (start, end) in enumerate(itertools.pairwise(cuts)):
        state = {"step": torch.tensor(float(step)), "exp_avg": values[start:end] * 2}
        store.save_shard(step, shard, (start, end), values[start:end], state)
    store.commit(step, {"shards": len(cuts) - 1})


def test_nothing_committed_means_no_checkpoint(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    assert store.latest() is None
    store.save_shard(10, 0, (0, 4), torch.zeros(4), {})  # saved but never committed
    assert store.latest() is None


def test_a_slice_is_restored_across_a_different_shard_count(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    values = torch.arange(10, dtype=torch.float32)
    save_step(store, 30, [0, 4, 7, 10], values)
    assert store.latest().step == 30
    assert store.latest().meta["shards"] == 3
    param, state = store.load_slice(30, (2, 9))  # spans all three saved shards
    assert torch.equal(param, values[2:9])
    assert torch.equal(state["exp_avg"], values[2:9] * 2)
    assert float(state["step"]) == 30.0  # scalars are taken as they are


def test_only_the_newest_steps_are_kept(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    for step in (10, 20, 30):
        save_step(store, step, [0, 5], torch.ones(5) * step)
    assert sorted(p.name for p in tmp_path.glob("step-*")) == ["step-00000020", "step-00000030"]
    assert torch.equal(store.load_slice(30, (0, 5))[0], torch.ones(5) * 30)


def test_a_step_missing_a_shard_is_a_clear_error(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save_shard(5, 0, (0, 3), torch.zeros(3), {})
    store.commit(5, {})
    with pytest.raises(AtollError, match=r"does not cover parameters 0\.\.6"):
        store.load_slice(5, (0, 6))


def test_a_corrupt_manifest_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text("{not json")
    with pytest.raises(AtollError, match="unreadable"):
        CheckpointStore(tmp_path).latest()
