import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoll.registry.priors import PriorsError, normalise_priors


def test_counts_become_probabilities() -> None:
    assert normalise_priors([30, 0, 10], max_classes=10) == [0.75, 0.0, 0.25]


def test_probabilities_stay_as_they_are() -> None:
    assert normalise_priors([0.5, 0.25, 0.25], max_classes=3) == [0.5, 0.25, 0.25]


def test_huge_counts_do_not_overflow_the_sum() -> None:
    priors = normalise_priors([1e308, 1e308, 0.0], max_classes=3)
    assert priors == [0.5, 0.5, 0.0]


@pytest.mark.parametrize(
    ("values", "problem", "index"),
    [
        ([], "at least one class", None),
        ([0.0, 0.0], "all zero", None),
        ([1.0, -0.5], "non-negative", 1),
        ([1.0, 2.0, math.nan], "finite", 2),
        ([math.inf, 1.0], "finite", 0),
        ([1.0] * 11, "11 classes; at most 10", None),
    ],
)
def test_what_cannot_be_a_label_distribution_is_refused_naming_the_entry(
    values: list[float], problem: str, index: int | None
) -> None:
    with pytest.raises(PriorsError, match=problem) as caught:
        normalise_priors(values, max_classes=10)
    assert caught.value.index == index


@given(
    st.lists(st.floats(min_value=0, max_value=1e300), min_size=1, max_size=50).filter(
        lambda v: max(v) > 0
    )
)
def test_normalised_priors_sum_to_one_and_keep_proportions(values: list[float]) -> None:
    priors = normalise_priors(values, max_classes=50)
    assert math.isclose(sum(priors), 1.0, rel_tol=1e-9)
    assert all(0 <= p <= 1 for p in priors)
    big = values.index(max(values))
    assert priors[big] == max(priors)
    assert all(p == 0 for p, v in zip(priors, values, strict=True) if v == 0)
