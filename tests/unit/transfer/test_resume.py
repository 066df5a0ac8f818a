import json

import pytest
from transfer_support import CONFIG, SHAPES, drifted_site, of, site, steady

from atoll.platform.transfer.core import AskNeighbours, CartelSite, SendReport
from atoll.platform.transfer.resume import CoreState


def through_json(state: CoreState) -> CoreState:
    """As a checkpoint keeps it."""
    return CoreState.from_json(json.loads(json.dumps(state.to_json())))


def resumed(core: CartelSite) -> CartelSite:
    again = site()
    again.restore(through_json(core.snapshot()))
    return again


def test_the_state_survives_json_unchanged() -> None:
    core = site()
    steady(core, 12)
    state = core.snapshot()
    assert through_json(state) == state


def test_a_resumed_core_goes_on_where_it_stopped() -> None:
    core = site()
    steady(core, 12)
    again = resumed(core)
    assert again.report() == core.report()  # priors, accuracy, counts, version
    assert (again.batches, again.samples, again.version) == (12, 120, 12)
    assert again.class_accuracy() == core.class_accuracy()
    # Its first batch reports at once (the registry's view is as old as the gap), with
    # the version going on from the checkpoint's, as the original's would have.
    first = of(SendReport, steady(again, 1, start=12))
    assert [e.report.version for e in first if isinstance(e, SendReport)] == [13]
    steady(again, 4, start=13)
    steady(core, 5, start=12)
    assert again.version == core.version == 17


def test_a_core_stopped_mid_search_resumes_training_with_an_empty_detector() -> None:
    core = drifted_site()
    assert core.phase == "asking" and core.drift_flag
    again = resumed(core)
    assert again.phase == "training" and not again.drift_flag and not again.candidates
    assert again.drifted_classes() == core.drifted_classes()  # the windows came back
    # The detector restarts empty: it needs a reference again before it fires.
    assert not of(AskNeighbours, steady(again, 2, start=12))


@pytest.mark.parametrize("classes", [3, 5])
def test_a_state_of_another_class_count_is_refused(classes: int) -> None:
    other = CartelSite("me", CONFIG, classes, "logreg:abc", SHAPES)
    with pytest.raises(ValueError, match=f"counts {classes} classes, not 4"):
        site().restore(other.snapshot())
