import numpy as np
import pytest

from atoll.platform.transfer.parts import (
    ModelPart,
    PartRefused,
    check_part,
    decode_part,
    encode_part,
    merge_part,
)

SHAPES = {"linear.weight": (4, 3), "linear.bias": (4,)}


def own() -> dict[str, np.ndarray]:
    return {"linear.weight": np.zeros((4, 3), np.float32), "linear.bias": np.zeros(4, np.float32)}


def part(**changes: object) -> ModelPart:
    fields: dict[str, object] = {
        "source": "b",
        "source_version": 7,
        "signature": "logreg:abc",
        "kind": "rows",
        "classes": (1, 3),
        "arrays": {
            "linear.weight": np.ones((2, 3), np.float32),
            "linear.bias": np.ones(2, np.float32),
        },
        "row_arrays": frozenset({"linear.weight", "linear.bias"}),
        "class_samples": (300, 100),
        "samples": 1000,
    }
    fields.update(changes)
    return ModelPart(**fields)  # type: ignore[arg-type]


def test_a_good_part_passes() -> None:
    check_part(part(), "logreg:abc", SHAPES, 4)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"signature": "logreg:other"}, "signature"),
        ({"classes": (1, 1)}, "repeat"),
        ({"classes": (1, 4)}, "outside"),
        ({"class_samples": (1,)}, "one count per class"),
        ({"arrays": {"linear.weight": np.ones((3, 3), np.float32)}}, "shape"),
        ({"arrays": {"conv.weight": np.ones((2, 3), np.float32)}}, "not in this model"),
        ({"arrays": {"linear.bias": np.array([1.0, np.nan], np.float32)}}, "NaN or infinity"),
        ({"arrays": {"linear.bias": np.array([np.inf, 0], np.float32)}}, "NaN or infinity"),
        ({"arrays": {"linear.bias": np.ones(2, np.float64)}}, "float64"),
        ({"arrays": {}}, "no arrays"),
    ],
)
def test_bad_parts_are_refused_with_the_reason(changes: dict[str, object], problem: str) -> None:
    with pytest.raises(PartRefused, match=problem):
        check_part(part(**changes), "logreg:abc", SHAPES, 4)


def test_replace_takes_the_neighbours_rows_and_leaves_the_others() -> None:
    merged = merge_part(own(), part(), [0, 0, 0, 0], 0, "replace")
    assert merged["linear.weight"][[1, 3]].tolist() == [[1, 1, 1]] * 2
    assert merged["linear.weight"][[0, 2]].tolist() == [[0, 0, 0]] * 2
    assert merged["linear.bias"].tolist() == [0, 1, 0, 1]


def test_average_goes_halfway() -> None:
    merged = merge_part(own(), part(), [0, 0, 0, 0], 0, "average")
    assert merged["linear.bias"].tolist() == [0, 0.5, 0, 0.5]


def test_sample_weighted_weighs_each_row_by_its_class_samples() -> None:
    # class 1: theirs 300, ours 100 -> 0.75; class 3: theirs 100, ours 300 -> 0.25
    merged = merge_part(own(), part(), [0, 100, 0, 300], 400, "sample-weighted")
    assert merged["linear.bias"].tolist() == pytest.approx([0, 0.75, 0, 0.25])
    assert merged["linear.weight"][1].tolist() == pytest.approx([0.75] * 3)


def test_sample_weighted_weighs_whole_arrays_by_all_samples() -> None:
    whole = part(
        arrays={"hidden": np.ones((2, 2), np.float32)}, row_arrays=frozenset(), samples=300
    )
    merged = merge_part(
        {"hidden": np.zeros((2, 2), np.float32)}, whole, [0] * 4, 100, "sample-weighted"
    )
    assert merged["hidden"].tolist() == [[0.75, 0.75]] * 2


def test_merge_does_not_touch_the_own_arrays() -> None:
    mine = own()
    merge_part(mine, part(), [0] * 4, 0, "replace")
    assert not mine["linear.bias"].any()


def test_wire_form_round_trips() -> None:
    original = part()
    back = decode_part(encode_part(original))
    assert back.classes == original.classes
    assert back.class_samples == original.class_samples
    assert back.row_arrays == original.row_arrays
    for name, array in original.arrays.items():
        assert np.array_equal(back.arrays[name], array)
        assert back.arrays[name].dtype == np.float32


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (b"not json\n", "malformed"),
        (encode_part(part())[:-4], "cut short"),
        (encode_part(part()) + b"xx", "follow the last array"),
    ],
)
def test_malformed_wire_forms_are_refused(blob: bytes, problem: str) -> None:
    with pytest.raises(PartRefused, match=problem):
        decode_part(blob)


def test_oversized_wire_forms_are_refused() -> None:
    with pytest.raises(PartRefused, match="cap"):
        decode_part(encode_part(part()), max_bytes=10)


def test_half_precision_wire_form_halves_the_arrays_and_decodes_to_float32() -> None:
    rng = np.random.default_rng(0)
    weights = rng.normal(0, 0.1, (2, 300)).astype(np.float32)
    original = part(
        arrays={"linear.weight": weights, "linear.bias": np.array([0.5, -1.25], np.float32)}
    )
    full, half = encode_part(original), encode_part(original, "float16")
    body = weights.nbytes + 8
    assert len(full) - len(half) == pytest.approx(body / 2, abs=16)  # the header says which
    back = decode_part(half)
    assert back.arrays["linear.weight"].dtype == np.float32
    assert np.allclose(back.arrays["linear.weight"], weights, rtol=1e-3, atol=1e-4)
    check_part(
        back,
        "logreg:abc",
        {"linear.weight": (4, 300), "linear.bias": (4,)},
        4,
    )


def test_a_part_too_large_for_half_precision_is_not_sent_so() -> None:
    big = part(
        arrays={
            "linear.weight": np.full((2, 3), 1e6, np.float32),
            "linear.bias": np.ones(2, np.float32),
        }
    )
    with pytest.raises(ValueError, match="float16"):
        encode_part(big, "float16")
