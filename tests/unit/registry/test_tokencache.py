import pytest

from atoll.registry.core.tokencache import Revocations, TokenCache

QUIET = Revocations(revoked_tokens=0, tokens=3, deregistered_sites=0, sites=2)


def watched() -> TokenCache:
    cache = TokenCache()
    assert cache.watch(QUIET)  # the first counts: a baseline
    return cache


def test_a_verified_token_is_trusted_while_the_revocation_counts_stay() -> None:
    cache = watched()
    cache.put("hash-a", "site-1", "token-1", cache.epoch)
    assert not cache.watch(QUIET)
    assert cache.get("hash-a") == ("site-1", "token-1")
    assert cache.get("hash-b") is None


@pytest.mark.parametrize(
    "moved",
    [
        QUIET._replace(revoked_tokens=1),  # a token revoked (by another process)
        QUIET._replace(deregistered_sites=1),  # a site deregistered
        QUIET._replace(tokens=2),  # a token row deleted by hand
        QUIET._replace(sites=1),  # a site row deleted by hand
    ],
)
def test_any_count_that_moves_forgets_every_token(moved: Revocations) -> None:
    cache = watched()
    cache.put("a", "site-1", "t1", cache.epoch)
    cache.put("b", "site-2", "t2", cache.epoch)
    assert cache.watch(moved)
    assert (cache.get("a"), cache.get("b")) == (None, None)
    cache.put("a", "site-1", "t1", cache.epoch)  # verified again, trusted again
    assert not cache.watch(moved)
    assert cache.get("a") == ("site-1", "t1")


def test_registrations_and_new_tokens_revoke_nothing() -> None:
    cache = watched()
    cache.put("a", "site-1", "t1", cache.epoch)
    assert not cache.watch(QUIET._replace(tokens=4, sites=3))  # a site registered
    assert not cache.watch(QUIET._replace(tokens=9, sites=3))  # tokens issued
    assert cache.get("a") == ("site-1", "t1")
    assert cache.watch(QUIET._replace(tokens=8, sites=3))  # then one deleted by hand
    assert cache.get("a") is None


def test_a_lookup_that_raced_a_revocation_is_not_cached() -> None:
    cache = watched()
    epoch = cache.epoch  # the lookup starts ...
    assert cache.watch(QUIET._replace(revoked_tokens=1))  # ... a revocation is seen ...
    cache.put("a", "site-1", "t1", epoch)  # ... its answer may predate it
    assert cache.get("a") is None
    epoch = cache.epoch
    cache.forget_site("site-9")  # this process revoked something meanwhile
    cache.put("a", "site-1", "t1", epoch)
    assert cache.get("a") is None


def test_revoking_forgets_every_token_of_the_site_and_only_those() -> None:
    cache = watched()
    entries = [("a1", "site-a", "t1"), ("a2", "site-a", "t2"), ("b1", "site-b", "t3")]
    for key, site, token in entries:
        cache.put(key, site, token, cache.epoch)
    cache.forget_site("site-a")
    assert (cache.get("a1"), cache.get("a2")) == (None, None)
    assert cache.get("b1") == ("site-b", "t3")


def test_when_revocations_cannot_be_read_nothing_is_trusted() -> None:
    cache = watched()
    cache.put("a", "site-1", "t1", cache.epoch)
    cache.forget_all()
    assert cache.get("a") is None
    assert cache.watch(QUIET)  # read again: a new baseline, not "nothing moved"


def test_a_disabled_cache_keeps_nothing() -> None:
    cache = TokenCache(enabled=False)
    cache.put("a", "site", "t", cache.epoch)
    assert cache.get("a") is None


def test_the_oldest_entries_make_room_when_full() -> None:
    cache = TokenCache(max_entries=10)
    for i in range(11):
        cache.put(f"h{i}", f"s{i}", f"t{i}", cache.epoch)
    assert cache.get("h0") is None
    assert cache.get("h10") == ("s10", "t10")
    assert sum(cache.get(f"h{i}") is not None for i in range(11)) == 10
