"""Sharded asp on a tiny in-memory network: owners, a restart (what it shares with the
direct exchange: test_exchanges.py)."""

import functools

import torch
from geo_support import exchange_spec, first_clock, local_step, restarted, run_exchange

from atoll.platform.geo.messages import Kind
from atoll.platform.geo.mirror_clock import PROCEED
from atoll.platform.geo.sharded import ShardedSync

SPARSE = exchange_spec("sharded")
run = functools.partial(run_exchange, kind=ShardedSync)


def test_a_site_moves_only_by_broadcasts_and_sends_each_owner_its_piece() -> None:
    policy, moved, [*contributions, broadcast] = first_clock(SPARSE, ShardedSync)
    assert {c.to for c in contributions} <= {1, 2} and broadcast.message.kind == Kind.UPDATE
    for c in contributions:  # indices relative to the owner's piece
        begin, end = policy.pieces[c.to]
        assert (c.message.offset, c.message.length) == (begin, end - begin)
    assert sum(len(c.message.indices) for c in contributions) <= 5  # 10% of 50
    changed = moved.nonzero().squeeze(1)
    begin, end = policy.pieces[0]
    assert ((changed >= begin) & (changed < end)).all()  # only what its own piece broadcast


def test_a_restarted_site_adopts_a_snapshot_and_keeps_contributions_to_its_piece() -> None:
    params, _, policies, _ = run(SPARSE, clocks=4, deliver_every=1)
    fresh, hello = restarted(SPARSE, ShardedSync, site=1)
    # A contribution reaches the restarted owner before the snapshot does.
    step = local_step(policies[2], torch.Generator().manual_seed(9))
    contributions = [o for o in policies[2].after_clock(step, 0.0) if o.to == 1]
    for c in contributions:
        fresh.receive(c.message, 0.0)
    [snapshot] = policies[0].receive(hello.message, 0.0)
    fresh.receive(snapshot.message, 0.0)
    assert torch.equal(fresh.params, params[0])
    assert fresh.clock == policies[0].clock and fresh.before_clock(0.0) is PROCEED
    assert fresh.final == policies[0].final == "average"  # the restart: end averaging too
    assert fresh.aggregate.abs().sum() == sum(
        c.message.float_values().abs().sum() for c in contributions
    )
