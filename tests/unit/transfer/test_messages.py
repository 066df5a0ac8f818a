import numpy as np
import pytest

from atoll.platform.transfer.messages import (
    Garbled,
    PartAnswer,
    PartDeclined,
    PartRequest,
    classes_to_give,
    declines,
    decode,
    encode,
)
from atoll.platform.transfer.parts import ModelPart, encode_part

REQUEST = PartRequest(
    id=3, signature="logreg:abc", classes=(0, 1, 2), drifted=(0, 1), min_accuracy=0.6
)


def part(weight: float = 1.0) -> ModelPart:
    return ModelPart(
        source="alpha",
        source_version=9,
        signature="logreg:abc",
        kind="rows",
        classes=(0, 1),
        arrays={"linear.weight": np.full((2, 3), weight, np.float32)},
        row_arrays=frozenset({"linear.weight"}),
        class_samples=(5, 6),
        samples=40,
    )


def test_each_message_comes_back_as_it_was_sent() -> None:
    assert decode(encode(REQUEST)) == REQUEST
    declined = PartDeclined(id=3, reason="not good")
    assert decode(encode(declined)) == declined
    answer = decode(encode(PartAnswer(3, part())))
    assert isinstance(answer, PartAnswer) and answer.id == 3
    assert answer.part.source == "alpha" and answer.part.classes == (0, 1)
    np.testing.assert_array_equal(answer.part.arrays["linear.weight"], np.ones((2, 3)))


def test_a_part_with_nan_still_decodes_the_site_refuses_it_on_merge() -> None:
    answer = decode(encode(PartAnswer(1, part(float("nan")))))
    assert isinstance(answer, PartAnswer)  # parts.check_part refuses it, naming the NaN


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"", "unknown message tag"),
        (b"X{}", "unknown message tag"),
        (b"Q{}", "Field required"),
        (b'R{"id": "x", "reason": 1}', "valid integer"),
        (b"P\x00\x00", "unknown message tag"),  # too short for a request id
        (b"P" + (1).to_bytes(8, "big") + encode_part(part())[:-4], "cut short"),
        (b"P" + (1).to_bytes(8, "big") + b"not json\n", "malformed part"),
    ],
)
def test_garbled_messages_are_refused_naming_the_problem(payload: bytes, problem: str) -> None:
    with pytest.raises(Garbled, match=problem):
        decode(payload)


@pytest.mark.parametrize(
    ("signature", "accuracy", "reason"),
    [
        ("logreg:abc", [0.9, 0.7, None], None),
        ("logreg:abc", [0.9, 0.4, None], None),  # a mean of 0.65: hard classes are allowed
        ("logreg:abc", [0.7, 0.4, None], "not good on the drifted classes"),
        ("logreg:abc", [None, 0.9, 0.9], "not good on the drifted classes"),  # too few samples
        ("logreg:abc", [0.9], "not good on the drifted classes"),  # a class it has no row for
        ("cnn:def", [0.9, 0.9, 0.9], "model signature cnn:def is not the asker's"),
    ],
)
def test_a_giver_declines_unless_good_on_the_drifted_classes_on_average(
    signature: str, accuracy: list[float | None], reason: str | None
) -> None:
    found = declines(REQUEST, signature, accuracy)
    assert found is None if reason is None else found is not None and reason in found


@pytest.mark.parametrize(
    ("class_samples", "given"),
    [
        ((50, 40, 30), (0, 1, 2)),
        ((50, 0, 30), (0, 1, 2)),  # 1 drifted: asked for by name
        ((50, 40, 0), (0, 1)),  # 2 never trained: its row would carry nothing
        ((50,), (0, 1)),  # no count for 2 at all
    ],
)
def test_a_giver_sends_the_rows_it_trained_and_the_drifted_ones(
    class_samples: tuple[int, ...], given: tuple[int, ...]
) -> None:
    assert classes_to_give(REQUEST, class_samples) == given
