from atoll.registry.core.tokencache import TokenCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_verified_token_is_trusted_for_the_ttl_and_no_longer() -> None:
    clock = Clock()
    cache = TokenCache(ttl_s=1.0, clock=clock)
    cache.put("hash-a", "site-1", "token-1")
    clock.now += 0.999
    assert cache.get("hash-a") == ("site-1", "token-1")
    clock.now += 0.001
    assert cache.get("hash-a") is None
    assert cache.get("hash-b") is None


def test_revoking_forgets_every_token_of_the_site_and_only_those() -> None:
    cache = TokenCache(ttl_s=60, clock=Clock())
    cache.put("a1", "site-a", "t1")
    cache.put("a2", "site-a", "t2")
    cache.put("b1", "site-b", "t3")
    cache.forget_site("site-a")
    assert (cache.get("a1"), cache.get("a2")) == (None, None)
    assert cache.get("b1") == ("site-b", "t3")


def test_a_zero_ttl_turns_the_cache_off() -> None:
    cache = TokenCache(ttl_s=0, clock=Clock())
    cache.put("a", "site", "t")
    assert cache.get("a") is None


def test_the_oldest_entries_make_room_when_full() -> None:
    cache = TokenCache(ttl_s=60, max_entries=10, clock=Clock())
    for i in range(11):
        cache.put(f"h{i}", f"s{i}", f"t{i}")
    assert cache.get("h0") is None
    assert cache.get("h10") == ("s10", "t10")
    assert sum(cache.get(f"h{i}") is not None for i in range(11)) == 10
