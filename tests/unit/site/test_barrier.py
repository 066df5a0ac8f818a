import pytest

from atoll.platform.site.barrier import BarrierViolation, BSPBarrier, ClockComplete


def test_clock_completes_only_when_every_worker_has_pushed() -> None:
    barrier = BSPBarrier(workers=3)
    assert barrier.push(0, 0, now=1.0) is None
    assert barrier.push(2, 0, now=1.5) is None
    assert barrier.missing() == [1]
    assert barrier.push(1, 0, now=4.0) == ClockComplete(clock=0, straggler_wait_s=3.0)
    assert barrier.clock == 1
    assert barrier.missing() == [0, 1, 2]


def test_straggler_wait_adds_up_over_clocks() -> None:
    barrier = BSPBarrier(workers=2)
    for clock, (first, last) in enumerate([(0.0, 0.5), (1.0, 1.25)]):
        barrier.push(0, clock, first)
        barrier.push(1, clock, last)
    assert barrier.total_wait_s == pytest.approx(0.75)


def test_a_single_worker_completes_every_clock_at_once() -> None:
    barrier = BSPBarrier(workers=1)
    assert barrier.push(0, 0, 0.0) == ClockComplete(0, 0.0)
    assert barrier.push(0, 1, 0.0) == ClockComplete(1, 0.0)


def test_a_worker_may_not_push_twice_in_a_clock() -> None:
    barrier = BSPBarrier(workers=2)
    barrier.push(0, 0, 0.0)
    with pytest.raises(BarrierViolation, match="worker 0 pushed clock 0 twice"):
        barrier.push(0, 0, 0.1)


@pytest.mark.parametrize("clock", [1, -1])
def test_a_push_for_another_clock_breaks_bsp(clock: int) -> None:
    with pytest.raises(BarrierViolation, match="while clock 0 is being gathered"):
        BSPBarrier(workers=2).push(0, clock, 0.0)


def test_unknown_workers_are_refused() -> None:
    with pytest.raises(BarrierViolation, match="unknown worker 2"):
        BSPBarrier(workers=2).push(2, 0, 0.0)


def test_a_resumed_barrier_starts_at_the_restored_clock() -> None:
    barrier = BSPBarrier(workers=1, clock=40)
    assert barrier.push(0, 40, 0.0) == ClockComplete(40, 0.0)
