"""When a device round is over, and which replies count in it."""

import pytest

from atoll.platform.devices.collect import Offer, RoundCollector, State


def collector(min_replies: int = 2) -> RoundCollector:
    return RoundCollector(1, {"m1": 11, "m2": 12, "m3": 13}, min_replies, deadline=10.0)


def test_complete_once_everyone_replied_before_the_deadline() -> None:
    c = collector()
    for m in ("m1", "m2"):
        assert c.offer(m) is Offer.ACCEPTED
    assert c.state(1.0) is State.COLLECTING
    assert c.offer("m3") is Offer.ACCEPTED
    assert c.state(1.0) is State.COMPLETE


def test_at_the_deadline_the_minimum_completes_the_round_without_the_silent() -> None:
    c = collector()
    c.offer("m1")
    c.offer("m3")
    assert c.state(10.0) is State.COMPLETE
    assert c.silent_nodes == [12]


def test_below_the_minimum_at_the_deadline_the_round_fails() -> None:
    c = collector(min_replies=2)
    c.offer("m1")
    assert c.state(10.0) is State.FAILED


def test_a_refused_reply_does_not_count_towards_the_minimum() -> None:
    c = collector(min_replies=2)
    c.offer("m1")
    c.offer("m2")
    c.refuse("m2")
    c.offer("m3")
    c.refuse("m3")
    assert c.state(0.0) is State.FAILED  # everyone answered; only one usably


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [("m1", "m1", Offer.DUPLICATE), ("m1", "zz", Offer.UNKNOWN)],
)
def test_nothing_counts_twice_or_from_elsewhere(first: str, second: str, expected: Offer) -> None:
    c = collector()
    c.offer(first)
    assert c.offer(second) is expected
    assert c.usable == 1


def test_a_reply_after_the_round_closed_is_late() -> None:
    c = collector(min_replies=1)
    c.offer("m1")
    assert c.state(10.0) is State.COMPLETE
    assert c.offer("m2") is Offer.LATE
    assert c.usable == 1


def test_the_minimum_must_be_positive() -> None:
    with pytest.raises(ValueError, match="min_replies"):
        collector(min_replies=0)
