"""Faults on the device tier, with the example's ClientApp in process: a device that
drops mid-round, a late reply, and replies that fail their checks."""

import logging
from pathlib import Path

import numpy as np
import pytest
from devices_support import MODEL, local_devices
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from atoll.platform.devices.rounds import DeviceRounds, NotEnoughDevices, RoundOptions
from atoll.platform.devices.site import initial_arrays

pytestmark = pytest.mark.integration
SMALL = {"max-train-samples": 64, "max-test-samples": 32}


class FakeClock:
    """Time that passes only when the driver sleeps: deadlines without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def rounds_over(grid: object, min_replies: int, clock: FakeClock) -> DeviceRounds:
    options = RoundOptions(min_replies=min_replies, timeout_s=10.0, poll_s=1.0)
    return DeviceRounds(grid, options, clock, clock.sleep)  # type: ignore[arg-type]


def test_a_dropped_device_leaves_the_round_to_the_others_at_the_deadline(
    fashion_mnist: Path,
) -> None:
    grid = local_devices(fashion_mnist, [0, 1, 2], 3, **SMALL)
    grid.offline.add(1001)
    clock = FakeClock()
    outcome = rounds_over(grid, 2, clock).train(1, initial_arrays(MODEL, 0), {})
    assert outcome.arrays is not None
    assert len(outcome.replies) == 2
    assert outcome.silent == [1001]
    assert clock.now >= 10.0  # it waited for the deadline, then went on


def test_below_the_minimum_the_round_fails_and_changes_nothing(fashion_mnist: Path) -> None:
    grid = local_devices(fashion_mnist, [0, 1, 2], 3, **SMALL)
    grid.offline |= {1001, 1002}
    outcome = rounds_over(grid, 2, FakeClock()).train(1, initial_arrays(MODEL, 0), {})
    assert outcome.arrays is None
    assert outcome.silent == [1001, 1002]


def test_too_few_devices_connected_is_a_clear_error(fashion_mnist: Path) -> None:
    grid = local_devices(fashion_mnist, [0], 3, **SMALL)
    rounds = rounds_over(grid, 2, FakeClock())
    with pytest.raises(NotEnoughDevices, match="1 devices connected after 300 s"):
        rounds.train(1, initial_arrays(MODEL, 0), {})


def test_a_late_reply_is_dropped_not_applied_twice(fashion_mnist: Path) -> None:
    grid = local_devices(fashion_mnist, [0, 1], 2, **SMALL)
    grid.hold(1001)
    clock = FakeClock()
    rounds = rounds_over(grid, 1, clock)
    start = initial_arrays(MODEL, 0)
    first = rounds.train(1, start, {})
    assert first.silent == [1001]
    grid.release(1001)  # its round-1 reply now arrives, during round 2
    second = rounds.train(2, start, {})
    assert second.late == 1
    assert sorted(r.node_id for r in second.replies) == [1000, 1001]  # round 2's own replies
    # Round 2 from the same start with the same devices: the same aggregate as without
    # the late reply (it was not mixed in).
    again = rounds_over(local_devices(fashion_mnist, [0, 1], 2, **SMALL), 1, FakeClock())
    again.train(1, start, {})
    clean = again.train(2, start, {})
    assert second.arrays is not None and clean.arrays is not None
    for name in clean.arrays:
        np.testing.assert_array_equal(second.arrays[name], clean.arrays[name])


def corrupting(how: str) -> ClientApp:
    """A ClientApp that replies as a broken device would."""
    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        arrays = {k: v.numpy().copy() for k, v in msg.content["arrays"].items()}
        examples: object = 10
        first = next(iter(arrays))
        if how == "nan":
            arrays[first].flat[0] = np.nan
        elif how == "shape":
            arrays[first] = np.zeros((3, 3), np.float32)
        elif how == "dtype":
            arrays[first] = arrays[first].astype(np.float64)
        elif how == "examples":
            examples = -5
        content = RecordDict(
            {
                "arrays": ArrayRecord(array_dict={k: Array(v) for k, v in arrays.items()}),
                "metrics": MetricRecord({"num-examples": examples}),
            }
        )
        return Message(content=content, reply_to=msg)

    return app


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("nan", "holds NaN or infinite values"),
        ("shape", "has shape (3, 3)"),
        ("dtype", "has dtype float64, expected float32"),
        ("examples", "'num-examples' is -5, not a positive integer"),
    ],
)
def test_a_bad_reply_is_refused_logged_with_its_node_and_not_aggregated(
    fashion_mnist: Path, how: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    grid = local_devices(fashion_mnist, [0, 1], 2, **SMALL)
    bad = corrupting(how)
    good = grid.app
    grid.app = ClientApp()  # device 1001 is broken; 1000 runs the example

    @grid.app.train()
    def route(msg: Message, context: Context) -> Message:
        return (bad if context.node_id == 1001 else good)(msg, context)

    with caplog.at_level(logging.WARNING, logger="atoll.devices"):
        outcome = rounds_over(grid, 1, FakeClock()).train(1, initial_arrays(MODEL, 0), {})
    assert [r.node_id for r in outcome.replies] == [1000]
    assert len(outcome.refusals) == 1 and reason in outcome.refusals[0].reason
    assert "reply from node 1001 refused" in caplog.text
    # The aggregate is device 1000's own model: nothing of the bad reply got in.
    assert outcome.arrays is not None
    for name, value in outcome.replies[0].arrays.items():
        np.testing.assert_array_equal(outcome.arrays[name], value)
