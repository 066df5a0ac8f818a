import random

from atoll.platform.net.backoff import Backoff


def test_delays_double_up_to_the_cap_with_jitter_in_the_upper_half() -> None:
    backoff = Backoff(initial_s=0.1, max_s=1.0, rng=random.Random(0))
    nominal = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    for expected in nominal:
        assert expected / 2 <= backoff.next_delay() <= expected


def test_jitter_spreads_sites_that_failed_together() -> None:
    delays = {Backoff(0.1, 1.0, rng=random.Random(seed)).next_delay() for seed in range(20)}
    assert len(delays) == 20


def test_a_success_starts_over_from_the_initial_delay() -> None:
    backoff = Backoff(initial_s=0.1, max_s=10.0, rng=random.Random(1))
    for _ in range(10):
        backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() <= 0.1


def test_many_failures_do_not_overflow() -> None:
    backoff = Backoff(initial_s=0.1, max_s=5.0)
    for _ in range(2000):
        assert backoff.next_delay() <= 5.0
