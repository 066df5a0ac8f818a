import dataclasses

import pytest

from atoll.platform.net.errors import LinkError, PeerRefused
from atoll.platform.net.frames import Hello
from atoll.platform.net.handshake import (
    Transcript,
    check_hello,
    dialer_of,
    new_incarnation,
    new_job_secret,
    new_nonce,
    secret_bytes,
)

SECRET = b"s" * 32
TRANSCRIPT = Transcript(
    dialer="a",
    acceptor="b",
    dialer_incarnation=b"\x01" * 16,
    acceptor_incarnation=b"\x02" * 16,
    dialer_nonce=b"\x03" * 32,
    acceptor_nonce=b"\x04" * 32,
)


def test_the_transcript_is_the_dialers_hello_and_the_acceptors_challenge() -> None:
    hello = Hello("a", "b", b"\x01" * 16, b"\x03" * 32)
    assert Transcript.of(hello, b"\x02" * 16, b"\x04" * 32) == TRANSCRIPT


def test_each_side_verifies_the_other_sides_proof() -> None:
    for role in ("dialer", "acceptor"):
        assert TRANSCRIPT.verify(SECRET, role, TRANSCRIPT.proof(SECRET, role))


def test_a_proof_is_bound_to_role_secret_and_every_field() -> None:
    proof = TRANSCRIPT.proof(SECRET, "dialer")
    assert len(proof) == 32
    assert not TRANSCRIPT.verify(SECRET, "acceptor", proof)  # no reflecting it back
    assert not TRANSCRIPT.verify(b"t" * 32, "dialer", proof)
    for field in dataclasses.fields(Transcript):
        value = getattr(TRANSCRIPT, field.name)
        changed = value + "x" if isinstance(value, str) else bytes([value[0] ^ 1]) + value[1:]
        other = dataclasses.replace(TRANSCRIPT, **{field.name: changed})
        assert not other.verify(SECRET, "dialer", proof), field.name


def test_fields_cannot_be_shifted_into_each_other() -> None:
    shifted = dataclasses.replace(TRANSCRIPT, dialer="ab", acceptor="")
    moved = dataclasses.replace(TRANSCRIPT, dialer="a", acceptor="b")
    assert shifted.proof(SECRET, "dialer") != moved.proof(SECRET, "dialer")


def test_the_smaller_name_dials() -> None:
    assert dialer_of("virginia", "tokyo") == dialer_of("tokyo", "virginia") == "tokyo"


def hello(site: str, peer: str = "m", version: int = 1) -> Hello:
    return Hello(site, peer, new_incarnation(), new_nonce(), version)


def test_an_acceptor_takes_a_known_smaller_site_that_dialed_it() -> None:
    check_hello(hello("a"), "m", frozenset({"a", "z"}))


@pytest.mark.parametrize(
    ("frame", "problem"),
    [
        (hello("mallory"), "unknown site 'mallory'"),
        (hello("z"), "'m' dials 'z', not the other way round"),
        (hello("a", peer="q"), "dialed 'q', but this is 'm'"),
        (hello("a", version=2), "speaks link protocol 2"),
    ],
)
def test_an_acceptor_refuses_hellos_it_cannot_serve(frame: Hello, problem: str) -> None:
    with pytest.raises(PeerRefused, match=problem):
        check_hello(frame, "m", frozenset({"a", "z"}))


def test_secrets_must_be_long_enough() -> None:
    assert secret_bytes("x" * 16) == b"x" * 16
    assert len(secret_bytes(new_job_secret())) >= 32
    with pytest.raises(LinkError, match="at least 16 bytes"):
        secret_bytes("short")


def test_incarnations_and_nonces_are_fresh() -> None:
    assert new_incarnation() != new_incarnation()
    assert new_nonce() != new_nonce()
