from atoll.platform.bus.keys import liveness_ttl_s
from atoll.platform.control.liveness import LivenessBoard, Transition


def test_the_key_outlives_one_missed_heartbeat_but_not_two() -> None:
    assert liveness_ttl_s(5.0) == 10.0


def test_transitions_are_reported_once_each_way() -> None:
    board = LivenessBoard()
    assert board.observe({"a": 1.0, "b": None}, now=1.0) == [
        Transition("a", True, 1.0),
        Transition("b", False, 1.0),
    ]
    assert board.observe({"a": 2.0, "b": None}, now=2.0) == []
    assert board.observe({"a": None, "b": 3.0}, now=3.0) == [
        Transition("a", False, 3.0),
        Transition("b", True, 3.0),
    ]
    assert board.last_beat == {"a": 2.0, "b": 3.0}


def test_a_forgotten_site_is_new_again() -> None:
    board = LivenessBoard()
    board.observe({"a": 1.0}, 1.0)
    board.forget("a")
    assert board.observe({"a": 2.0}, 2.0) == [Transition("a", True, 2.0)]
