import pytest
import torch

from atoll.platform.geo.significance import AdaptiveThreshold, SignificanceFilter, ThresholdSchedule


def filter_with(acc: list[float]) -> SignificanceFilter:
    f = SignificanceFilter(len(acc), ThresholdSchedule(0.01))
    f.accumulate(torch.tensor(acc))
    return f


def test_relative_change_above_the_threshold_is_sent_below_is_not() -> None:
    params = torch.tensor([1.0, 1.0, -2.0, -2.0])
    f = filter_with([0.011, 0.009, -0.021, 0.019])
    selection = f.select(params, clock=1)
    assert selection.indices.tolist() == [0, 2]
    assert selection.values.tolist() == pytest.approx([0.011, -0.021])


def test_a_zero_weight_makes_any_update_significant() -> None:
    selection = filter_with([1e-9, 0.0]).select(torch.tensor([0.0, 0.0]), clock=1)
    assert selection.indices.tolist() == [0]  # but not an element with nothing to send


def test_a_sent_elements_accumulator_is_zeroed_and_the_rest_keep_accumulating() -> None:
    params = torch.ones(2)
    f = filter_with([0.011, 0.006])
    selection = f.select(params, 1)
    f.sent(selection, selection.values)
    assert f.accumulator.tolist() == pytest.approx([0.0, 0.006])
    f.accumulate(torch.tensor([0.0, 0.006]))
    assert f.select(params, 2).indices.tolist() == [1]  # 0.012 accumulated: now significant


def test_float16_rounding_stays_in_the_accumulator() -> None:
    f = filter_with([0.0123456])
    selection = f.select(torch.ones(1), 1)
    as_sent = selection.values.to(torch.float16)
    f.sent(selection, as_sent)
    residual = float(f.accumulator[0])
    assert residual != 0
    assert residual == pytest.approx(0.0123456 - float(as_sent[0]), abs=1e-09)


def test_drain_returns_everything_and_clears() -> None:
    f = filter_with([0.0, 1e-6, -2e-6])
    rest = f.drain()
    assert rest.indices.tolist() == [1, 2]
    assert float(f.accumulator.abs().sum()) == 0


def test_schedules() -> None:
    assert ThresholdSchedule(0.01).at(100) == 0.01
    assert ThresholdSchedule(0.04, "inverse-sqrt").at(16) == pytest.approx(0.01)
    assert ThresholdSchedule(0.04, "inverse-sqrt").at(0) == 0.04
    assert ThresholdSchedule(0.02, "lr").at(5, lr_ratio=0.5) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        ThresholdSchedule(-1)


def test_adaptive_threshold_rises_over_budget_and_falls_under_it_within_bounds() -> None:
    adaptive = AdaptiveThreshold(budget_bps=1e6, step=2.0, v_min=0.005, v_max=0.04)
    f = SignificanceFilter(1, ThresholdSchedule(0.01), adaptive)
    adaptive.observe(1.2e6)  # over 1.1x budget
    f.select(torch.ones(1), 1)
    assert f.threshold == pytest.approx(0.02)
    adaptive.observe(1.0e6)  # within [0.9, 1.1]: unchanged
    f.select(torch.ones(1), 2)
    assert f.threshold == pytest.approx(0.02)
    for _ in range(5):
        adaptive.observe(5e6)
        f.select(torch.ones(1), 3)
    assert f.threshold == pytest.approx(0.04)  # capped
    adaptive.observe(0.5e6)  # one step down from the cap, not from a wound-up value
    f.select(torch.ones(1), 4)
    assert f.threshold == pytest.approx(0.02)


@pytest.mark.parametrize(
    ("limit", "sent"),
    [(None, [0, 1, 2, 3]), (4, [0, 1, 2, 3]), (2, [1, 3]), (1, [3])],
)
def test_a_limit_keeps_the_most_significant_elements_in_index_order(
    limit: int | None, sent: list[int]
) -> None:
    params = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0])
    f = SignificanceFilter(5, ThresholdSchedule(0.01))
    f.accumulate(torch.tensor([0.02, 0.5, 0.03, 0.001, 0.0]))  # ratios 2%, 50%, 3%, inf
    assert f.select(params, 1, limit=limit).indices.tolist() == sent
