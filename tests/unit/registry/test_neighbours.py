import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from atoll.registry.neighbours import (
    Ranked,
    js_divergence,
    js_divergences,
    js_divergences_32,
    nearest,
    nearest_rows,
    priors_from_bytes,
    priors_to_bytes,
    rank_neighbours,
    screen_tolerance,
    self_terms,
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


@pytest.mark.parametrize(
    ("sites", "classes", "alpha", "k", "ties", "masked"),
    [
        (1, 3, 0.5, 1, False, False),  # one site: nothing to screen
        (50, 10, 0.5, 60, False, True),  # k above the eligible count: every eligible row
        (2000, 10, 0.5, 5, False, False),
        (2000, 10, 0.05, 5, False, True),  # sparse priors: many zeros
        (2000, 10, 5.0, 20, False, True),  # flat priors: divergences close together
        (2000, 10, 0.5, 5, True, False),  # priors on a 0.01 grid: exact ties at the k-th
        (500, 300, 0.5, 7, True, True),  # wide priors: a wider tolerance
    ],
)
def test_the_float32_screen_answers_as_float64_over_every_row_does(
    sites: int, classes: int, alpha: float, k: int, ties: bool, masked: bool
) -> None:
    rng = np.random.default_rng(sites + classes + k)
    priors = rng.dirichlet(np.full(classes, alpha), sites)
    if ties:
        priors = np.round(priors, 2)
        priors[priors.sum(axis=1) == 0, 0] = 1.0
        priors /= priors.sum(axis=1, keepdims=True)
    ids = [f"site-{i:05d}" for i in rng.permutation(sites)]
    eligible = rng.random(sites) < 0.8 if masked else None
    terms = self_terms(priors)
    for target in (priors[0], rng.dirichlet(np.full(classes, alpha))):
        exact = nearest(js_divergences(target, priors, terms), ids, k, eligible)
        assert nearest_rows(target, priors, terms, ids, k, eligible) == exact
        rough = js_divergences_32(target, priors, terms)
        assert np.abs(rough - js_divergences(target, priors, terms)).max() < (
            screen_tolerance(classes) / 2
        )


def test_a_screen_that_passes_every_row_still_answers() -> None:
    # Identical priors everywhere: all rows tie with the k-th; ids break the tie.
    priors = np.tile([0.5, 0.25, 0.25], (100, 1))
    ids = [f"s{i:03d}" for i in range(100)][::-1]
    ranked = nearest_rows(np.array([0.5, 0.25, 0.25]), priors, self_terms(priors), ids, 3)
    assert [r.site_id for r in ranked] == ["s000", "s001", "s002"]
    assert nearest_rows(np.array([1.0]), priors, self_terms(priors), ids, 0) == []
