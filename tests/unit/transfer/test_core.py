from dataclasses import replace

import numpy as np
import pytest
from transfer_support import CONFIG, batch, drift, drifted_site, of, site, steady

from atoll.platform.transfer.core import (
    AskNeighbours,
    CartelSite,
    Effect,
    FetchFailed,
    FetchPart,
    Log,
    MergePart,
    NeighboursFailed,
    NeighboursFound,
    NeighboursRanked,
    PartArrived,
    RecordLineage,
    ReportSent,
    SendReport,
)
from atoll.platform.transfer.neighbours import SiteReport
from atoll.platform.transfer.parts import ModelPart


def neighbour(
    name: str, accuracy_2: float | None = 0.95, priors: tuple[float, ...] = (0.3, 0.3, 0.4, 0)
) -> SiteReport:
    return SiteReport(
        name,
        10.0,
        priors,
        0.9,
        (0.9, 0.9, accuracy_2, None),
        (50, 50, 60, 0),
        160,
        "logreg:abc",
        9,
        False,
    )


def good_part(source: str, **changes: object) -> ModelPart:
    fields: dict[str, object] = {
        "source": source,
        "source_version": 9,
        "signature": "logreg:abc",
        "kind": "rows",
        "classes": (2,),
        "arrays": {
            "linear.weight": np.ones((1, 3), np.float32),
            "linear.bias": np.ones(1, np.float32),
        },
        "row_arrays": frozenset({"linear.weight", "linear.bias"}),
        "class_samples": (60,),
        "samples": 160,
    }
    fields.update(changes)
    return ModelPart(**fields)  # type: ignore[arg-type]


def test_reports_every_m_batches() -> None:
    effects = steady(site(), 12)
    assert len(of(SendReport, effects)) == 3  # the first batch, then batches 5 and 10


def test_reports_when_the_priors_move() -> None:
    core = site(CONFIG.model_copy(update={"report_every": 0, "prior_move_threshold": 0.05}))
    quiet = steady(core, 8)
    assert len(of(SendReport, quiet)) == 1
    moved = [e for i in range(3) for e in core.handle(batch(20.0 + i, [3] * 10, [True] * 10))]
    assert of(SendReport, moved)


def test_reports_when_the_accuracy_moves() -> None:
    core = site(CONFIG.model_copy(update={"report_every": 0, "accuracy_move_threshold": 0.05}))
    assert len(of(SendReport, steady(core, 8))) == 1  # 0.9 right throughout: no news
    better = [e for i in range(6) for e in core.handle(batch(20.0 + i, [0, 1] * 5, [True] * 10))]
    assert of(SendReport, better)


def test_steady_error_does_not_fire() -> None:
    assert not of(AskNeighbours, steady(site(), 40))


def test_no_drift_during_warmup() -> None:
    core = site(CONFIG.model_copy(update={"warmup": 50}))
    steady(core, 10)
    assert not of(AskNeighbours, drift(core, 10))


def test_drift_names_the_classes_and_reports_it() -> None:
    core = site()
    steady(core, 10)
    effects = drift(core, 10)
    (ask,) = of(AskNeighbours, effects)
    assert isinstance(ask, AskNeighbours)
    assert ask.drifted == (2,)
    reports = of(SendReport, effects)
    assert reports and isinstance(reports[-1], SendReport) and reports[-1].report.drift
    logs = [e for e in of(Log, effects) if isinstance(e, Log) and e.event == "drift"]
    assert logs and "window(W=2" in logs[0].message


def test_fetches_from_the_nearest_good_neighbour() -> None:
    core = drifted_site()
    effects = core.handle(
        NeighboursFound(
            [neighbour("poor", 0.3), neighbour("far", priors=(0, 0, 0.5, 0.5)), neighbour("near")]
        )
    )
    (fetch,) = of(FetchPart, effects)
    assert isinstance(fetch, FetchPart)
    assert fetch.source.site == "near"
    assert fetch.classes == (0, 1, 2)  # the drifted class and those the site now sees


def test_merges_a_good_part_and_records_lineage() -> None:
    core = drifted_site()
    core.handle(NeighboursFound([neighbour("near")]))
    effects = core.handle(PartArrived(good_part("near")))
    assert of(MergePart, effects)
    (lineage,) = of(RecordLineage, effects)
    assert isinstance(lineage, RecordLineage)
    assert (lineage.source, lineage.source_version, lineage.classes) == ("near", 9, (2,))
    assert core.phase == "training"


@pytest.mark.parametrize(
    "bad",
    [
        good_part("near", signature="cnn:other"),
        good_part("near", arrays={"linear.bias": np.array([np.nan], np.float32)}),
        good_part("near", arrays={"linear.weight": np.ones((1, 5), np.float32)}),
    ],
)
def test_refuses_a_bad_part_keeps_the_model_and_tries_the_next(bad: ModelPart) -> None:
    core = drifted_site()
    core.handle(NeighboursFound([neighbour("near"), neighbour("next", priors=(0.2, 0.2, 0.6, 0))]))
    effects = core.handle(PartArrived(bad))
    assert not of(MergePart, effects)
    refused = [e for e in of(Log, effects) if isinstance(e, Log) and e.event == "refused"]
    assert refused and "kept the model" in refused[0].message
    (fetch,) = of(FetchPart, effects)
    assert isinstance(fetch, FetchPart) and fetch.source.site == "next"


def test_a_dead_neighbour_gives_way_to_the_next_then_to_training_alone() -> None:
    core = drifted_site()
    core.handle(NeighboursFound([neighbour("near"), neighbour("next", priors=(0.2, 0.2, 0.6, 0))]))
    (fetch,) = of(FetchPart, core.handle(FetchFailed("near", "timed out")))
    assert isinstance(fetch, FetchPart) and fetch.source.site == "next"
    effects = core.handle(FetchFailed("next", "timed out"))
    assert [e.event for e in of(Log, effects) if isinstance(e, Log)][-1] == "gave-up"
    assert core.phase == "training"
    steady(core, 3, start=20)  # and it goes on training


def test_registry_down_keeps_training_and_catches_up() -> None:
    core = site()
    first = steady(core, 1)
    assert of(SendReport, first)
    logs = core.handle(ReportSent(ok=False, reason="connection refused"))
    assert [e.event for e in logs if isinstance(e, Log)] == ["registry-down"]
    retry = steady(core, 1, start=1)
    assert of(SendReport, retry)  # the next batch tries again
    assert core.handle(ReportSent(ok=False, reason="still down")) == []  # logged once
    steady(core, 1, start=2)
    back = core.handle(ReportSent(ok=True))
    assert [e.event for e in back if isinstance(e, Log)] == ["registry-up"]


def test_no_neighbour_answer_means_training_alone() -> None:
    core = drifted_site()
    effects = core.handle(NeighboursFailed("registry down"))
    assert core.phase == "training"
    assert not of(FetchPart, effects)


def test_an_unasked_part_is_refused() -> None:
    core = site()
    steady(core, 3)
    effects = core.handle(PartArrived(good_part("stranger")))
    assert not of(MergePart, effects)


def test_one_drift_starts_one_transfer() -> None:
    core = drifted_site()
    core.handle(NeighboursFound([neighbour("near")]))
    core.handle(PartArrived(good_part("near")))
    assert not of(AskNeighbours, drift(core, 12))  # still cooling down


def test_mismatched_batch_is_an_error() -> None:
    with pytest.raises(ValueError, match="labels"):
        site().handle(batch(0.0, [0, 1], [True]))


def test_registry_ranked_neighbours_are_tried_in_its_order_without_self_up_to_k() -> None:
    core = drifted_site()
    ranked = [neighbour("me"), neighbour("far", accuracy_2=None), neighbour("b"), neighbour("c")]
    effects = site_handles(core, NeighboursRanked(ranked), k=2)
    # Per-class accuracy is the giver's to check: "far" is tried though it reported none.
    assert [e.source.site for e in of(FetchPart, effects)] == ["far"]  # type: ignore[attr-defined]
    assert [r.site for r in core.candidates] == ["far", "b"]
    fail = core.handle(FetchFailed("far", "declined: not good on the drifted classes"))
    assert [e.source.site for e in of(FetchPart, fail)] == ["b"]  # type: ignore[attr-defined]
    logged = of(Log, fail)
    assert logged[0].fields == {"source": "far"}  # type: ignore[attr-defined]


def test_registry_ranked_neighbours_when_not_asking_change_nothing() -> None:
    core = site()
    steady(core, 5)
    assert core.handle(NeighboursRanked([neighbour("b")])) == []
    assert core.phase == "training"


def site_handles(core: CartelSite, event: NeighboursRanked, k: int) -> list[Effect]:
    core.config = core.config.model_copy(update={"k": k})
    return core.handle(event)


def test_a_rise_in_error_with_no_class_standing_out_asks_nobody() -> None:
    """Noise: the error rises (0.1 to 0.4) but spread over the classes the site always
    saw, none of them poor (each right 3 times in 5)."""
    core = site()
    steady(core, 10)
    effects: list[Effect] = []
    for i in range(10, 12):
        labels = [0, 1] * 5
        effects += core.handle(batch(float(i), labels, [j < 6 for j in range(10)]))
    assert not of(AskNeighbours, effects)
    events = [e.event for e in of(Log, effects) if isinstance(e, Log)]
    assert events and set(events) == {"drift-noise"}
    assert core.phase == "training"
    assert of(AskNeighbours, drift(core, 12)), "a real drift right after still asks"


def test_a_rare_class_seen_a_little_more_is_not_drift() -> None:
    """A class at a 2% share seen twice in 20 samples: likely enough (p ~ 0.06)."""
    core = site()
    for i in range(10):  # class 3 once in 50 samples
        labels = [0, 1] * 5 if i % 5 else [0, 1, 3, 0, 1, 0, 1, 0, 1, 0]
        core.handle(batch(float(i), labels, [lbl != 3 for lbl in labels]))
    labels = [0, 1, 3, 0, 1, 0, 1, 0, 1, 0]
    core.handle(batch(10.0, labels, [lbl != 3 and j > 2 for j, lbl in enumerate(labels)]))
    effects = core.handle(batch(11.0, labels, [lbl != 3 and j > 2 for j, lbl in enumerate(labels)]))
    assert core.drifted_classes() == []
    assert not of(AskNeighbours, effects)


def test_the_part_holds_the_classes_since_the_drift_not_those_gone() -> None:
    core = site()
    for i in range(10):  # classes 0 and 3
        core.handle(batch(float(i), [0, 3] * 5, [True] * 10))
    for i in range(10, 12):  # class 3 gone, 1 and 2 new and always wrong
        labels = [0, 1, 2, 1, 2, 1, 2, 1, 2, 0]
        core.handle(batch(float(i), labels, [lbl == 0 for lbl in labels]))
    assert core.wanted_classes() == (0, 1, 2)


def test_asks_only_for_rows_the_neighbour_trained_and_the_drifted_ones() -> None:
    core = drifted_site()  # wants classes 0, 1 and 2; 2 drifted
    never_saw_0 = replace(neighbour("near"), class_samples=(0, 50, 60, 0))
    (fetch,) = of(FetchPart, core.handle(NeighboursFound([never_saw_0])))
    assert isinstance(fetch, FetchPart)
    assert fetch.classes == (1, 2)
    core = drifted_site()
    says_none_of_2 = replace(neighbour("near"), class_samples=(50, 50, 0, 0))
    (fetch,) = of(FetchPart, core.handle(NeighboursFound([says_none_of_2])))
    assert isinstance(fetch, FetchPart) and fetch.classes == (0, 1, 2)
    core = drifted_site()
    # The real registry's reports count no samples per class: the wanted rows and those of
    # class 3, which this site never saw (the source leaves out what it never trained).
    counts_unknown = replace(neighbour("near"), class_samples=())
    (fetch,) = of(FetchPart, core.handle(NeighboursFound([counts_unknown])))
    assert isinstance(fetch, FetchPart) and fetch.classes == (0, 1, 2, 3)
    core = drifted_site()
    knows_3 = replace(neighbour("near"), class_samples=(50, 50, 50, 20))
    (fetch,) = of(FetchPart, core.handle(NeighboursFound([knows_3])))
    assert isinstance(fetch, FetchPart) and fetch.classes == (0, 1, 2, 3)


def test_the_bar_on_neighbours_is_the_sites_own_level_when_that_is_lower() -> None:
    """A slow learner: the site was right 6 times in 10 before the drift, so a neighbour
    at 0.7 on the drifted class is good enough; one at 0.5 is not."""
    core = site()
    for i in range(10):
        core.handle(batch(float(i), [0, 1] * 5, [j < 6 for j in range(10)]))
    effects = drift(core, 10)
    (ask,) = of(AskNeighbours, effects)
    assert isinstance(ask, AskNeighbours) and ask.min_accuracy == pytest.approx(0.6)
    effects = core.handle(NeighboursFound([neighbour("weak", 0.5), neighbour("fair", 0.7)]))
    (fetch,) = of(FetchPart, effects)
    assert isinstance(fetch, FetchPart) and fetch.source.site == "fair"
    good = site()
    steady(good, 10)  # right 9 times in 10: the configured 0.8 is the bar
    (ask,) = of(AskNeighbours, drift(good, 10))
    assert isinstance(ask, AskNeighbours) and ask.min_accuracy == pytest.approx(0.8)
