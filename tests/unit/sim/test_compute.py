"""A real site's pause to evaluate, read from its run log's events."""

import pytest

from atoll.platform.core.events import (
    CheckpointSaved,
    Evaluated,
    RunEvent,
    StepDone,
    TrainingStarted,
)
from atoll.platform.sim.compute import ComputeProfile, eval_pause_s


def step(at: float, clock: int) -> StepDone:
    return StepDone(time=at, step=clock, loss=1.0, epoch=0)


def evaluated(at: float, clock: int) -> Evaluated:
    return Evaluated(time=at, step=clock, test_accuracy=0.5, test_loss=1.0)


def started(at: float) -> TrainingStarted:
    return TrainingStarted(time=at, step=0, total_steps=30, params=1, samples=1)


@pytest.mark.parametrize(
    ("events", "pause"),
    [
        # from the end of the evaluation clock to the evaluation's (end) stamp
        ([step(1.0, 10), evaluated(1.05, 10)], 0.05),
        # the median over the evaluation clocks
        (
            [step(1.0, 10), evaluated(1.05, 10), step(2.0, 20), evaluated(2.07, 20),
             step(3.0, 25), step(3.5, 30), evaluated(3.53, 30)],
            0.05,
        ),
        # a checkpoint taken before the evaluation is not the evaluation's
        ([step(1.0, 10), CheckpointSaved(time=1.2, step=10), evaluated(1.25, 10)], 0.05),
        # the last clock's evaluation follows the closing round: left out
        ([step(1.0, 10), evaluated(1.05, 10), step(2.0, 40), evaluated(9.0, 40)], 0.05),
        # no periodic evaluation, or one without its clock (a resumed log's start)
        ([started(0.0), step(1.0, 9)], None),
        ([evaluated(1.05, 10)], None),
    ],
)  # fmt: skip
def test_the_evaluation_pause_from_a_run_log(events: list[RunEvent], pause: float | None) -> None:
    found = eval_pause_s(events, clocks=40)
    assert found == (None if pause is None else pytest.approx(pause))


def test_a_profile_without_an_evaluation_pause_has_none_and_sites_may_differ() -> None:
    assert ComputeProfile(0.05).eval_for("frankfurt") == 0.0
    profile = ComputeProfile(0.05, eval_s=0.04, eval_sites={"frankfurt": 0.06})
    assert (profile.eval_for("frankfurt"), profile.eval_for("virginia")) == (0.06, 0.04)
