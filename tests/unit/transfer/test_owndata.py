import numpy as np
import pytest
import torch

from atoll.platform.data.datasets import Dataset
from atoll.platform.transfer.owndata import OwnStream, batch_positions


@pytest.mark.parametrize(
    ("samples", "batch", "size", "expected"),
    [
        (10, 0, 4, [0, 1, 2, 3]),
        (10, 1, 4, [4, 5, 6, 7]),
        (10, 2, 4, [8, 9, 0, 1]),  # the end of the data: a new pass starts
        (3, 1, 4, [1, 2, 0, 1]),  # a batch longer than the data
        (5, 0, 1, [0]),
    ],
)
def test_stored_order_is_the_files_order_then_another_pass(
    samples: int, batch: int, size: int, expected: list[int]
) -> None:
    assert batch_positions(samples, batch, size, "stored", seed=0).tolist() == expected


def test_shuffled_covers_every_sample_once_a_pass_and_differs_by_pass_and_seed() -> None:
    first = np.concatenate([batch_positions(12, b, 4, "shuffled", 7) for b in range(3)])
    second = np.concatenate([batch_positions(12, b, 4, "shuffled", 7) for b in range(3, 6)])
    assert sorted(first.tolist()) == list(range(12)) == sorted(second.tolist())
    assert first.tolist() != list(range(12))
    assert first.tolist() != second.tolist()
    other_seed = np.concatenate([batch_positions(12, b, 4, "shuffled", 8) for b in range(3)])
    assert first.tolist() != other_seed.tolist()
    # A batch across two passes takes the end of one permutation and the start of the next.
    across = batch_positions(12, 1, 8, "shuffled", 7).tolist()
    assert across == first[8:].tolist() + second[:4].tolist()


def test_a_stream_needs_data() -> None:
    with pytest.raises(ValueError, match="at least one training sample"):
        batch_positions(0, 0, 4, "stored", 0)


def test_the_stream_gives_the_sites_own_samples_and_its_whole_test_split() -> None:
    x = torch.arange(6, dtype=torch.float32).reshape(6, 1)
    train = Dataset(x, torch.tensor([0, 1, 0, 1, 0, 1]), ("a", "b"))
    test = Dataset(x[:2], torch.tensor([0, 1]), ("a", "b"))
    stream = OwnStream(train, test, "stored", seed=0)
    bx, by = stream.batch(1, 4)
    assert bx.flatten().tolist() == [4.0, 5.0, 0.0, 1.0] and by.tolist() == [0, 1, 0, 1]
    tx, ty = stream.test_set(99)
    assert tx is test.x and ty is test.y
