from atoll.platform.geo.mirror_clock import PROCEED, MirrorClock, Wait


def test_a_site_ds_plus_one_ahead_waits_until_the_slow_mirror_ticks() -> None:
    clock = MirrorClock(site=0, sites=3, staleness=1)
    clock.tick(1, 5, now=0.0)
    clock.tick(2, 3, now=0.0)
    clock.clock = 4  # 4 - 3 = 1 <= DS: may go on
    assert clock.may_start_next(now=1.0) is PROCEED
    clock.clock = 5  # DS + 1 ahead of site 2
    decision = clock.may_start_next(now=1.0)
    assert isinstance(decision, Wait)
    assert decision.on == (2,)
    clock.tick(2, 4, now=1.5)
    assert clock.may_start_next(now=1.5) is PROCEED


def test_ds_zero_is_lockstep() -> None:
    clock = MirrorClock(site=1, sites=2, staleness=0, clock=1)
    assert isinstance(clock.may_start_next(0.0), Wait)
    clock.tick(0, 1, 0.0)
    assert clock.may_start_next(0.0) is PROCEED


def test_ticks_never_move_a_mirror_backwards() -> None:
    clock = MirrorClock(site=0, sites=2)
    clock.tick(1, 7, 0.0)
    clock.tick(1, 6, 0.1)  # reordered or repeated
    assert clock.known[1] == 7


def test_a_silent_mirror_stops_holding_others_back_and_counts_again_when_heard() -> None:
    clock = MirrorClock(site=0, sites=3, staleness=1, lease_s=10.0, clock=5)
    clock.tick(1, 5, now=0.0)
    clock.tick(2, 2, now=0.0)
    assert isinstance(clock.may_start_next(now=5.0), Wait)
    clock.tick(1, 5, now=5.0)  # site 1 keeps talking, site 2 is silent
    assert clock.may_start_next(now=10.5) is PROCEED  # site 2's lease expired
    assert clock.live(10.5) == [1]
    clock.tick(2, 2, now=11.0)  # back, still behind: holds the site again
    assert isinstance(clock.may_start_next(now=11.0), Wait)
    clock.tick(2, 4, now=11.5)
    assert clock.may_start_next(now=11.5) is PROCEED


def test_a_mirror_never_heard_from_is_let_go_after_the_lease() -> None:
    clock = MirrorClock(site=0, sites=2, staleness=0, lease_s=3.0, start_s=100.0, clock=1)
    assert isinstance(clock.may_start_next(now=102.0), Wait)
    assert clock.may_start_next(now=103.5) is PROCEED
