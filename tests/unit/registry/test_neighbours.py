import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from atoll.registry.neighbours import (
    Ranked,
    js_divergence,
    js_divergences,
    priors_from_bytes,
    priors_to_bytes,
    rank_neighbours,
    stack_priors,
)

distributions = st.lists(st.floats(0, 1, allow_subnormal=False), min_size=2, max_size=12).filter(
    lambda v: sum(v) > 0.01
)


def normalised(values: list[float]) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    return a / a.sum()


def test_identical_priors_diverge_by_zero_and_disjoint_ones_by_one_bit() -> None:
    assert js_divergence([0.5, 0.5, 0.0], [0.5, 0.5, 0.0]) == pytest.approx(0.0, abs=1e-12)
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)


def test_a_value_worked_by_hand() -> None:
    # p = (1, 0), q = (1/2, 1/2), so m = (3/4, 1/4):
    # KL(p||m) = log2(4/3); KL(q||m) = 1/2 log2(2/3) + 1/2 log2(2).
    expected = 0.5 * np.log2(4 / 3) + 0.5 * (0.5 * np.log2(2 / 3) + 0.5)
    assert js_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(expected)
    assert expected == pytest.approx(0.3112781244591328)


@given(distributions, distributions)
def test_matches_scipy_and_is_symmetric_and_bounded(p: list[float], q: list[float]) -> None:
    p_, q_ = normalised(p), normalised(q)
    width = max(len(p_), len(q_))
    reference = (
        jensenshannon(np.pad(p_, (0, width - len(p_))), np.pad(q_, (0, width - len(q_))), base=2)
        ** 2
    )
    d = js_divergence(p_, q_)
    assert d == pytest.approx(reference, abs=1e-9)
    assert d == pytest.approx(js_divergence(q_, p_), abs=1e-12)
    assert 0.0 <= d <= 1.0


def test_vanishing_probabilities_do_not_break_the_arithmetic() -> None:
    # Halving 5e-324 underflows to 0; a naive p / ((p + q) / 2) would then say "disjoint".
    assert js_divergence([1.0, 5e-324], [1.0, 0.0]) == pytest.approx(0.0, abs=1e-12)
    assert js_divergence([1e-300, 1.0], [0.0, 1.0]) == pytest.approx(0.0, abs=1e-12)


def test_shorter_priors_count_as_zero_for_the_missing_classes() -> None:
    assert js_divergence([0.5, 0.5], [0.5, 0.5, 0.0]) == pytest.approx(0.0, abs=1e-12)
    rows = js_divergences(np.array([1.0]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert rows.tolist() == pytest.approx([0.0, 1.0])


def test_neighbours_come_nearest_first_with_their_divergence() -> None:
    target = [0.7, 0.2, 0.1]
    candidates = {"far": [0.0, 0.0, 1.0], "near": [0.7, 0.2, 0.1], "mid": [0.4, 0.4, 0.2]}
    ranked = rank_neighbours(target, list(candidates), stack_priors(_blobs(candidates)), k=3)
    assert [r.site_id for r in ranked] == ["near", "mid", "far"]
    for r in ranked:
        assert r.divergence == pytest.approx(js_divergence(target, candidates[r.site_id]))


def test_k_limits_the_answer_and_ties_go_to_the_smaller_site_id() -> None:
    same = [0.5, 0.5]
    candidates = {"c": same, "a": same, "b": same, "d": [1.0, 0.0]}
    ranked = rank_neighbours(same, list(candidates), stack_priors(_blobs(candidates)), k=2)
    assert ranked == [
        Ranked("a", pytest.approx(0.0, abs=1e-12)),
        Ranked("b", pytest.approx(0.0, abs=1e-12)),
    ]


@pytest.mark.parametrize("k", [0, 5])
def test_no_candidates_or_no_k_means_no_neighbours(k: int) -> None:
    assert rank_neighbours([1.0], [], stack_priors([]), k) == []
    assert rank_neighbours([1.0], ["a"], stack_priors([priors_to_bytes([1.0])]), 0) == []


def test_stored_priors_round_trip_and_stack_with_padding() -> None:
    assert priors_from_bytes(priors_to_bytes([0.25, 0.75])).tolist() == [0.25, 0.75]
    matrix = stack_priors([priors_to_bytes([1.0]), priors_to_bytes([0.5, 0.5])])
    assert matrix.tolist() == [[1.0, 0.0], [0.5, 0.5]]
    assert stack_priors([priors_to_bytes([0.1, 0.9])] * 3).shape == (3, 2)


def _blobs(candidates: dict[str, list[float]]) -> list[bytes]:
    return [priors_to_bytes(v) for v in candidates.values()]
