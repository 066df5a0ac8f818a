"""The checks on devices' replies and their FedAvg aggregate."""

import numpy as np
import pytest

from atoll.platform.devices.replies import (
    DeviceReply,
    check_reply,
    fedavg,
    specs_of,
    weighted_metrics,
)

SENT = {"w": np.zeros((2, 3), np.float32), "b": np.zeros(3, np.float32)}
EXPECTED = specs_of(SENT)


def reply(node: int = 7, examples: object = 10, **arrays: np.ndarray) -> DeviceReply:
    merged = {"w": np.ones((2, 3), np.float32), "b": np.ones(3, np.float32), **arrays}
    return DeviceReply(node, merged, {"num-examples": examples, "train_loss": 0.5})


def test_a_well_formed_reply_passes() -> None:
    assert check_reply(reply(), EXPECTED) is None


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (reply(w=np.ones((3, 2), np.float32)), "'w' has shape (3, 2), expected (2, 3)"),
        (reply(b=np.ones(3, np.float64)), "'b' has dtype float64, expected float32"),
        (reply(b=np.array([1, np.nan, 1], np.float32)), "'b' holds NaN or infinite values"),
        (reply(w=np.full((2, 3), np.inf, np.float32)), "'w' holds NaN or infinite values"),
        (reply(examples=0), "'num-examples' is 0, not a positive integer"),
        (reply(examples=-3), "'num-examples' is -3, not a positive integer"),
        (reply(examples=2.5), "'num-examples' is 2.5, not a positive integer"),
        (reply(examples=float("nan")), "'num-examples' is nan, not a positive integer"),
        (reply(examples=True), "'num-examples' is True, not a positive integer"),
        (reply(examples="10"), "'num-examples' is '10', not a positive integer"),
        (reply(examples=None), "'num-examples' is None, not a positive integer"),
        (reply(extra=np.ones(1, np.float32)), "missing [], unexpected ['extra']"),
        (DeviceReply(7, {"w": SENT["w"]}, {"num-examples": 1}), "missing ['b'], unexpected []"),
    ],
)
def test_a_bad_reply_is_refused_naming_the_node_and_the_problem(
    bad: DeviceReply, reason: str
) -> None:
    refusal = check_reply(bad, EXPECTED)
    assert refusal is not None
    assert reason in refusal.reason
    assert str(refusal).startswith("reply from node 7 refused: ")


def test_an_evaluation_reply_is_checked_for_its_weight_only() -> None:
    assert check_reply(DeviceReply(1, {}, {"num-examples": 4})) is None
    assert check_reply(DeviceReply(1, {}, {"num-examples": 0})) is not None


def test_fedavg_weights_by_num_examples_and_keeps_dtypes() -> None:
    a = DeviceReply(
        1,
        {"w": np.full((2, 3), 1.0, np.float32), "b": np.zeros(3, np.float32)},
        {"num-examples": 1},
    )
    b = DeviceReply(
        2, {"w": np.full((2, 3), 4.0, np.float32), "b": np.ones(3, np.float32)}, {"num-examples": 3}
    )
    out = fedavg([a, b], EXPECTED)
    np.testing.assert_allclose(out["w"], np.full((2, 3), 3.25))
    np.testing.assert_allclose(out["b"], np.full(3, 0.75))
    assert out["w"].dtype == np.float32
    assert list(out) == ["w", "b"]


def test_fedavg_does_not_depend_on_arrival_order() -> None:
    rng = np.random.default_rng(0)
    replies = [
        DeviceReply(
            n,
            {
                "w": rng.normal(size=(2, 3)).astype(np.float32),
                "b": rng.normal(size=3).astype(np.float32),
            },
            {"num-examples": n + 1},
        )
        for n in range(5)
    ]
    forward, backward = fedavg(replies, EXPECTED), fedavg(replies[::-1], EXPECTED)
    assert all(np.array_equal(forward[k], backward[k]) for k in forward)


def test_fedavg_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no replies"):
        fedavg([], EXPECTED)


def test_metrics_are_averaged_by_num_examples() -> None:
    a = DeviceReply(1, {}, {"num-examples": 1, "eval_acc": 0.2, "note": "x"})
    b = DeviceReply(2, {}, {"num-examples": 3, "eval_acc": 0.6})
    assert weighted_metrics([a, b]) == pytest.approx({"eval_acc": 0.5, "num-examples": 4.0})
