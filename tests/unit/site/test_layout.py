import itertools

import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.site.layout import SiteLayout


@pytest.mark.parametrize(("n", "shards"), [(10, 1), (10, 3), (11, 4), (7, 7), (1000, 6)])
def test_shards_tile_the_vector_with_sizes_that_differ_by_at_most_one(n: int, shards: int) -> None:
    layout = SiteLayout(workers=2, shards=shards)
    bounds = [layout.bounds(s, n) for s in range(shards)]
    assert bounds[0][0] == 0
    assert bounds[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    sizes = [end - start for start, end in bounds]
    assert max(sizes) - min(sizes) <= 1


def test_co_located_shards_spread_over_workers() -> None:
    layout = SiteLayout(workers=2, shards=3)
    assert layout.world_size == 2
    assert [layout.owner(s) for s in range(3)] == [0, 1, 0]
    assert layout.shards_of(0) == [0, 2]
    assert layout.shards_of(1) == [1]
    assert layout.describe(0) == "rank 0 (worker 0, shard 0, shard 2)"


def test_dedicated_shards_get_server_ranks_after_the_workers() -> None:
    layout = SiteLayout(workers=2, shards=2, dedicated_shards=True)
    assert layout.world_size == 4
    assert [layout.owner(s) for s in range(2)] == [2, 3]
    assert layout.is_worker(1)
    assert not layout.is_worker(2)
    assert layout.shards_of(0) == []
    assert layout.describe(3) == "rank 3 (shard 1)"


def test_impossible_layouts_are_refused() -> None:
    with pytest.raises(AtollError, match="at least 1 worker"):
        SiteLayout(workers=0, shards=1)
    with pytest.raises(AtollError, match="at least 1 shard"):
        SiteLayout(workers=1, shards=0)
    with pytest.raises(AtollError, match="5 shards for only 4 parameters"):
        SiteLayout(workers=1, shards=5).bounds(0, 4)
