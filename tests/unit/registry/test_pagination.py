import pytest

from atoll.registry.pagination import CursorError, decode_cursor, encode_cursor


def test_a_cursor_gives_back_its_position() -> None:
    cursor = encode_cursor(["site-b", "0c1f"])
    assert decode_cursor(cursor, (str, str)) == ["site-b", "0c1f"]
    assert decode_cursor(encode_cursor([42]), (int,)) == [42]


def test_cursors_are_url_safe() -> None:
    cursor = encode_cursor(["ü/+?&=", "x" * 40])
    assert cursor.replace("-", "").replace("_", "").isalnum()


@pytest.mark.parametrize(
    "cursor", ["", "%%%", "bm90IGpzb24", encode_cursor({"a": 1}), encode_cursor([1, 2])]
)  # type: ignore[list-item]
def test_anything_else_is_refused(cursor: str) -> None:
    with pytest.raises(CursorError):
        decode_cursor(cursor, (str, str))


def test_a_cursor_of_the_wrong_kinds_is_refused() -> None:
    with pytest.raises(CursorError):
        decode_cursor(encode_cursor(["a", "b"]), (int,))
    with pytest.raises(CursorError):
        decode_cursor(encode_cursor([True]), (int,))
