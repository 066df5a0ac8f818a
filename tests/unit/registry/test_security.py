import pytest

from atoll.platform.service.security import (
    TOKEN_PREFIX,
    bearer_token,
    hash_token,
    matches_any,
    new_token,
    token_hint,
)


def test_tokens_are_long_distinct_and_recognisable() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100
    assert all(t.startswith(TOKEN_PREFIX) for t in tokens)
    assert all(len(t) >= 40 for t in tokens)


def test_a_stored_hash_reveals_neither_the_token_nor_its_hint() -> None:
    token = new_token()
    digest = hash_token(token)
    assert digest == hash_token(token)
    assert len(digest) == 64
    assert token not in digest
    assert token_hint(token) not in digest
    assert hash_token(token + "x") != digest


def test_the_hint_is_too_short_to_be_the_token() -> None:
    token = new_token()
    assert token.startswith(token_hint(token))
    assert len(token) - len(token_hint(token)) >= 32


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("Bearer   abc  ", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("", None),
        (None, None),
        ("abc", None),
    ],
)
def test_bearer_header_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_admin_matching_checks_every_hash() -> None:
    admins = [hash_token("first-admin-token"), hash_token("second-admin-token")]
    assert matches_any(hash_token("second-admin-token"), admins)
    assert not matches_any(hash_token("someone-else"), admins)
    assert not matches_any(hash_token("anything"), [])
