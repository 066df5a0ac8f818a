import numpy as np
import pytest

from atoll.platform.transfer.neighbours import (
    SiteReport,
    choose_neighbours,
    decode_report,
    divergence,
    encode_report,
)


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


def test_accuracy_filter_takes_the_mean_over_the_drifted_classes() -> None:
    ask = {**ASK, "drifted": [1, 2]}
    hard_one = report("hard-one", [0.5, 0.5, 0, 0], [0.9, 0.7, 0.95, 0.9])  # mean 0.825
    poor = report("poor", [0.5, 0.5, 0, 0], [0.9, 0.6, 0.95, 0.9])  # mean 0.775
    unseen = report("unseen", [0.5, 0.5, 0, 0], [0.9, None, 1.0, 0.9])
    got = choose_neighbours([hard_one, poor, unseen], **ask)  # type: ignore[arg-type]
    assert names(got) == ["hard-one"]


def test_report_wire_form_round_trips_to_its_precision() -> None:
    original = report(
        "site-3",
        [0.25, 0.25, 0.5, 0.0],
        [0.9, None, 0.5, 1.0],
        class_samples=(100, 0, 300_000, 5),
        endpoint="10.0.0.1:9000",
        drift=True,
    )
    blob = encode_report(original)
    assert len(blob) < 100
    back = decode_report(blob)
    assert back.site == "site-3" and back.endpoint == "10.0.0.1:9000" and back.drift
    assert back.class_samples == (100, 0, 300_000, 5)
    assert back.class_accuracy[1] is None
    assert np.allclose(back.class_priors, original.class_priors, atol=1 / 254)
    assert np.allclose(back.class_accuracy[2:], original.class_accuracy[2:], atol=1 / 254)
    assert divergence(back.class_priors, original.class_priors) < 0.01
    assert decode_report(encode_report(report("x", [1, 0], [None, None]))).endpoint is None


@pytest.mark.parametrize("cut", [1, 5, 30])
def test_a_malformed_report_is_a_value_error(cut: int) -> None:
    blob = encode_report(report("site-3", [0.5, 0.5], [0.9, 0.9]))
    with pytest.raises(ValueError, match="malformed"):
        decode_report(blob[:-cut])
    with pytest.raises(ValueError, match="malformed"):
        decode_report(blob + b"x")
