import numpy as np

from atoll.registry.core.candidates import CandidateCache, Candidates


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def some(*ids: str) -> Candidates:
    return Candidates(list(ids), np.eye(len(ids)))


def test_candidates_are_reused_for_the_ttl_only() -> None:
    clock = Clock()
    cache = CandidateCache(ttl_s=1.0, clock=clock)
    cache.put("sig", 300.0, some("a", "b"))
    clock.now = 0.5
    assert cache.get("sig", 300.0).site_ids == ["a", "b"]  # type: ignore[union-attr]
    assert cache.get("sig", 60.0) is None  # another liveness window is another question
    assert cache.get("other", 300.0) is None
    clock.now = 1.0
    assert cache.get("sig", 300.0) is None


def test_a_zero_ttl_reads_afresh_every_time() -> None:
    cache = CandidateCache(ttl_s=0, clock=Clock())
    cache.put("sig", 300.0, some("a"))
    assert cache.get("sig", 300.0) is None


def test_the_signature_asked_about_longest_ago_makes_room() -> None:
    cache = CandidateCache(ttl_s=10, max_signatures=2, clock=Clock())
    cache.put("one", 1.0, some("a"))
    cache.put("two", 1.0, some("b"))
    assert cache.get("one", 1.0) is not None  # now "two" is the oldest asked
    cache.put("three", 1.0, some("c"))
    assert cache.get("two", 1.0) is None
    assert cache.get("one", 1.0) is not None
    assert cache.get("three", 1.0) is not None
