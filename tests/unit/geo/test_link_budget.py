"""The share of elements a tracking site sends follows its slowest link's backlog."""

import pytest

from atoll.platform.geo.link_budget import LinkBudget


@pytest.mark.parametrize(
    ("backlogs", "shares"),
    [
        # no backlog: grows from the floor by 1.25x a clock, up to the ceiling
        ([0.0, 0.0, 0.0], [0.00125, 0.0015625, 0.001953125]),
        ([0.0] * 20, [0.004] * 1),  # (the last of twenty clocks) capped
        # congested: halves, never below the floor
        ([0.2], [0.001]),
        ([0.0] * 6 + [0.2], [0.00190734863]),
        # between half the target and the target: holds
        ([0.0, 0.03, 0.03], [0.00125, 0.00125, 0.00125]),
    ],
)
def test_the_share_grows_while_links_keep_up_and_halves_when_one_backs_up(
    backlogs: list[float], shares: list[float]
) -> None:
    budget = LinkBudget(ceiling=0.004, floor=0.001, target_s=0.05)
    seen = [budget.observe(b) for b in backlogs]
    assert seen[-len(shares) :] == pytest.approx(shares)


def test_it_starts_at_the_floor_and_counts_congested_clocks() -> None:
    budget = LinkBudget(ceiling=0.01, floor=0.001)
    assert budget.share == 0.001
    assert budget.elements(100_000) == 100
    assert budget.elements(10) == 1  # at least one
    budget.observe(1.0)
    budget.observe(1.0)
    assert budget.congested_clocks == 2


@pytest.mark.parametrize(("ceiling", "floor"), [(0.01, 0.02), (0.0, 0.0), (1.5, 0.1)])
def test_bad_bounds_are_named(ceiling: float, floor: float) -> None:
    with pytest.raises(ValueError, match="floor <= ceiling"):
        LinkBudget(ceiling=ceiling, floor=floor)
