import pytest

from atoll.platform.core.events import (
    Evaluated,
    GeoStats,
    RankStarted,
    StepDone,
    TrainingFailed,
    TrainingFinished,
    TrainingStarted,
)
from atoll.platform.site.progress import EvalPoint, SiteProgress


def started(step: int, t: float = 1.0) -> TrainingStarted:
    return TrainingStarted(time=t, step=step, total_steps=100, params=10)


def geo(rank: int, shard: int, sent: int, stall: float, t: float = 2.0) -> GeoStats:
    link = f"a->b#{shard}"  # a link name per shard, so that sums show
    return GeoStats(time=t, rank=rank, shard=shard, policy="asp", clock=5, stall_s=stall,
                    bytes_sent=sent, links={link: sent})  # fmt: skip


def finished(step: int, stopped: bool, accuracy: float | None) -> TrainingFinished:
    return TrainingFinished(time=3.0, step=step, stopped=stopped, test_accuracy=accuracy)


def test_a_run_log_replays_to_the_same_progress() -> None:
    events = [
        RankStarted(time=0.5, rank=0, pid=1),
        started(0),
        StepDone(time=1.1, step=1, loss=2.3, epoch=0),
        Evaluated(time=1.2, step=1, test_accuracy=0.3, test_loss=2.0),
        geo(0, 0, 1000, 0.5),
        finished(100, stopped=False, accuracy=0.9),
    ]
    progress = SiteProgress()
    assert [progress.apply(e) for e in events] == [None, None, "step", "eval", "geo", "end"]
    assert (progress.clock, progress.total_clocks) == (100, 100)
    assert progress.completed
    assert progress.final_accuracy == progress.accuracy == 0.9
    assert (progress.wan_bytes, progress.stall_s) == (1000, 0.5)
    assert (progress.started_at, progress.finished_at) == (1.0, 3.0)
    assert progress.evals == [EvalPoint(clock=1, accuracy=0.3, time=1.2)]
    assert progress.traffic == [(2.0, 1000)]


# The stall of a site: ranks wait at once (the slowest counts), a rank's shards one after
# another (they add up), incarnations one after another (they add up).
@pytest.mark.parametrize(
    ("reports", "stall"),
    [
        pytest.param([(1, 0, 0, 1.0), (1, 0, 0, 3.0)], 3.0, id="a shard's count is cumulative"),
        pytest.param([(1, 0, 0, 1.0), (1, 1, 1, 2.5)], 2.5, id="two ranks: the slowest"),
        pytest.param([(1, 0, 0, 1.0), (1, 0, 1, 2.5)], 3.5, id="one rank, two shards: the sum"),
        pytest.param([(1, 0, 0, 2.0), (2, 0, 0, 0.5)], 2.5, id="two incarnations: the sum"),
        pytest.param(
            [(1, 0, 0, 1.0), (1, 0, 1, 1.0), (1, 1, 2, 1.5), (2, 1, 2, 4.0)],
            6.0,
            id="all of it",
        ),
    ],
)
def test_the_stall_of_a_site(reports: list[tuple[int, int, int, float]], stall: float) -> None:
    progress = SiteProgress()
    for incarnation, rank, shard, seconds in reports:
        while progress.incarnation < incarnation:
            progress.apply(started(0))
        progress.apply(geo(rank, shard, 0, seconds))
    assert progress.stall_s == pytest.approx(stall)


def test_bytes_of_each_incarnation_add_up_on_the_totals_and_on_each_link() -> None:
    progress = SiteProgress()
    for event in [started(0), geo(0, 0, 500, 1.0), geo(0, 1, 700, 2.0), started(40, 9.0),
                  geo(0, 0, 100, 0.5, t=10.0)]:  # fmt: skip
        progress.apply(event)
    assert (progress.incarnation, progress.clock) == (2, 40)
    assert progress.wan_bytes == 500 + 700 + 100
    assert progress.link_bytes == {"a->b#0": 600, "a->b#1": 700}
    assert progress.traffic[-1] == (10.0, 1300)
    assert progress.started_at == 1.0  # the first start


def test_a_stop_is_not_a_completion_and_a_failure_is_remembered_until_restarted() -> None:
    progress = SiteProgress()
    progress.apply(started(0))
    assert progress.apply(finished(30, stopped=True, accuracy=None)) == "end"
    assert not progress.completed
    assert (progress.final_accuracy, progress.clock) == (None, 30)
    assert progress.apply(TrainingFailed(time=3.0, message="rank 1 died")) == "end"
    assert progress.failure == "rank 1 died"
    progress.apply(started(30))
    assert progress.failure is None
