import numpy as np
import pytest

from atoll.platform.transfer.neighbours import SiteReport, choose_neighbours, divergence


def report(
    site: str, priors: list[float], class_accuracy: list[float | None], **kw: object
) -> SiteReport:
    fields: dict[str, object] = {
        "site": site,
        "time_s": 100.0,
        "class_priors": tuple(priors),
        "accuracy": 0.9,
        "class_accuracy": tuple(class_accuracy),
        "class_samples": tuple(100 for _ in priors),
        "samples": 400,
        "signature": "logreg:abc",
        "version": 3,
        "drift": False,
    }
    fields.update(kw)
    return SiteReport(**fields)  # type: ignore[arg-type]


GOOD = [0.9, 0.9, 0.9, 0.9]
ASK = {
    "asking": "me",
    "priors": [0.5, 0.5, 0, 0],
    "signature": "logreg:abc",
    "drifted": [1],
    "now_s": 110.0,
    "live_window_s": 60.0,
    "min_accuracy": 0.8,
    "k": 2,
}


def names(reports: list[SiteReport]) -> list[str]:
    return [r.site for r in reports]


def test_divergence_is_zero_for_the_same_and_one_for_disjoint() -> None:
    assert divergence([1, 0], [1, 0]) == pytest.approx(0)
    assert divergence([1, 0], [0, 1]) == pytest.approx(1)
    assert divergence([1], [0.5, 0.5]) == pytest.approx(divergence([1, 0], [0.5, 0.5]))


def test_nearest_first_by_jensen_shannon() -> None:
    reports = [
        report("far", [0, 0.1, 0.9, 0], GOOD),
        report("near", [0.5, 0.5, 0, 0], GOOD),
        report("mid", [0.2, 0.5, 0.3, 0], GOOD),
    ]
    assert names(choose_neighbours(reports, **ASK)) == ["near", "mid"]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (report("x", [0.5, 0.5, 0, 0], [0.9, 0.5, 0.9, 0.9]), "poor on the drifted class"),
        (report("x", [0.5, 0.5, 0, 0], [0.9, None, 0.9, 0.9]), "never saw the drifted class"),
        (report("x", [0.5, 0.5, 0, 0], GOOD, time_s=10.0), "not live"),
        (report("x", [0.5, 0.5, 0, 0], GOOD, signature="cnn:zzz"), "another model"),
        (report("me", [0.5, 0.5, 0, 0], GOOD), "itself"),
    ],
)
def test_filtered_out(bad: SiteReport, why: str) -> None:
    ok = report("ok", [0, 0.5, 0.5, 0], GOOD)
    assert names(choose_neighbours([bad, ok], **ASK)) == ["ok"], why  # type: ignore[arg-type]


def test_random_choice_ignores_accuracy_but_not_liveness() -> None:
    reports = [
        report("poor", [0.5, 0.5, 0, 0], [0.9, 0.1, 0.9, 0.9]),
        report("dead", [0.5, 0.5, 0, 0], GOOD, time_s=0.0),
    ]
    rng = np.random.default_rng(0)
    assert names(choose_neighbours(reports, **ASK, rng=rng)) == ["poor"]  # type: ignore[arg-type]
