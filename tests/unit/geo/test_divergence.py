"""The divergence guard: a loss that is not a number, or that blows up, ends the run."""

import math

import pytest

from atoll.platform.geo.divergence import DivergenceGuard


def first_verdict(losses: list[float]) -> tuple[int, str] | None:
    guard = DivergenceGuard(chance=2.3, factor=3.0, warmup=3, smoothing=0.5)
    for clock, loss in enumerate(losses):
        verdict = guard.observe(clock, loss)
        if verdict is not None:
            return verdict.clock, verdict.reason
    return None


@pytest.mark.parametrize(
    ("losses", "clock", "says"),
    [
        ([2.3, 2.0, 1.5, 1.0, 0.8, 0.7], None, None),  # training: fine
        ([2.3, 2.0, math.nan], 2, "loss is nan"),  # before the warm-up too
        ([2.3, math.inf], 1, "loss is inf"),
        ([2.3, 1.0, 0.5, 0.5, 0.5, 5.0, 10.0], 5, "loss blew up at clock 5"),
        ([2.3, 1.0, 0.1, 0.02, 0.02, 0.3, 0.3], None, None),  # 0.02 to 0.3: noise, not a blow-up
        ([0.1, 0.1, 0.1, 0.1, 0.6, 0.7, 0.7], None, None),  # 7x its lowest, still below chance
        ([2.3, 1.0, 0.5, 0.5, 1.2, 1.2, 1.2], None, None),  # worse, not blown up
        ([9.0, 9.0, 9.0], None, None),  # a high start is no blow-up
    ],
)
def test_divergence_is_a_nan_or_a_loss_grown_past_factor_times_its_lowest(
    losses: list[float], clock: int | None, says: str | None
) -> None:
    verdict = first_verdict(losses)
    if clock is None:
        assert verdict is None
    else:
        assert verdict is not None
        assert verdict[0] == clock and says is not None and says in verdict[1]


def test_chance_is_the_loss_of_a_uniform_guess() -> None:
    assert DivergenceGuard.for_classes(10).chance == pytest.approx(math.log(10))


def test_a_factor_of_one_or_less_is_refused() -> None:
    with pytest.raises(ValueError, match="factor"):
        DivergenceGuard(factor=1.0)
