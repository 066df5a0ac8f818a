"""Where a site's ranks compute: the choice, what the machine has, and the backend."""

import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.site.device import Placement, place_site


@pytest.mark.parametrize(
    ("choice", "gpus", "ranks", "placed"),
    [
        ("cpu", 0, 2, Placement("cpu", "gloo")),
        ("cpu", 4, 2, Placement("cpu", "gloo")),  # asked for: GPUs left alone
        ("auto", 0, 2, Placement("cpu", "gloo")),
        ("auto", 2, 2, Placement("cuda", "nccl")),
        ("cuda", 2, 1, Placement("cuda", "nccl")),
    ],
)
def test_placement(choice, gpus: int, ranks: int, placed: Placement) -> None:
    assert place_site(choice, gpus, ranks) == placed


@pytest.mark.parametrize(
    ("choice", "gpus", "ranks", "says"),
    [
        ("cuda", 0, 1, "--device cuda, but this machine has no CUDA device"),
        ("cuda", 1, 2, "2 ranks of the site on this machine but 1 CUDA device"),
        ("auto", 1, 3, "each rank owns one GPU"),
    ],
)
def test_impossible_placements_are_one_line(choice, gpus: int, ranks: int, says: str) -> None:
    with pytest.raises(AtollError, match=says) as caught:
        place_site(choice, gpus, ranks)
    assert "\n" not in str(caught.value)


def test_each_rank_owns_the_device_of_its_local_rank() -> None:
    assert Placement("cuda", "nccl").device(3) == "cuda:3"
    assert Placement("cpu", "gloo").device(3) == "cpu"
