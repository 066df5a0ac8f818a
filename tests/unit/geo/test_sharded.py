"""Sharded asp on a tiny in-memory network: owners, error feedback, the closing flush."""

import pytest
import torch
from geo_support import (
    Network,
    assert_round_trips,
    exchange_spec,
    finish_all,
    local_step,
    replicas,
    restarted,
    run_exchange,
    sent_kinds,
)

from atoll.platform.geo.messages import Kind
from atoll.platform.geo.mirror_clock import PROCEED
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.sharded import ShardedSync
from atoll.platform.geo.spec import GeoSpec

SPARSE, DENSE = exchange_spec("sharded"), exchange_spec("sharded", dense=True)


def run(
    spec: GeoSpec, clocks: int, deliver_every: int, sites: int = 3
) -> tuple[list[torch.Tensor], torch.Tensor, list[ShardedSync], Network]:
    return run_exchange(spec, ShardedSync, clocks, deliver_every, sites)


@pytest.mark.parametrize("spec", [DENSE, SPARSE], ids=["dense", "sparse"])
@pytest.mark.parametrize("deliver_every", [1, 4])
def test_replicas_are_equal_once_every_broadcast_arrived(spec: GeoSpec, deliver_every: int) -> None:
    params, expected, _, _ = run(spec, clocks=8, deliver_every=deliver_every)
    for p in params[1:]:
        assert torch.equal(p, params[0])  # every piece: the same additions in its owner's order
    # Dense, every round closed has gone out in full: every replica holds every step.
    # Sparse, the residuals and the owners' aggregates still hold some.
    assert torch.allclose(params[0], expected, atol=1e-6) == (spec is DENSE)


AVERAGED = SPARSE.model_copy(update={"final": "average"})


@pytest.mark.parametrize("spec", [DENSE, SPARSE, AVERAGED], ids=["dense", "sparse", "averaged"])
@pytest.mark.parametrize("deliver_every", [1, 4])
def test_the_closing_flush_puts_every_replica_where_all_steps_lead(
    spec: GeoSpec, deliver_every: int
) -> None:
    params, expected, policies, net = run(spec, clocks=8, deliver_every=deliver_every)
    finish_all(policies, net)
    for p in params:
        assert torch.equal(p, params[0])
        torch.testing.assert_close(p, expected, atol=1e-4, rtol=0)  # float16 rounding is left


@pytest.mark.parametrize("value_type", ["float16", "int8"])
def test_error_feedback_conserves_every_step(value_type: str) -> None:
    spec = SPARSE.model_copy(update={"value_type": value_type})
    params, expected, policies, _ = run(spec, clocks=6, deliver_every=2)
    held = sum(p.residual for p in policies)
    for p in policies:
        start, end = p.pieces[p.site]
        held[start:end] += p.aggregate
    # Applied (the replica) + held back (residuals, owners' aggregates) = every step taken.
    torch.testing.assert_close(params[0] + held, expected, atol=1e-6, rtol=0)


def test_a_site_moves_only_by_broadcasts_and_sends_each_owner_its_piece() -> None:
    params = replicas(3)
    start = params[0].clone()
    policy = build_policy(SPARSE, 0, 3, params[0])
    assert isinstance(policy, ShardedSync)
    step = local_step(policy, torch.Generator().manual_seed(1))
    out = policy.after_clock(step, 0.0)
    *contributions, broadcast = out
    assert {c.to for c in contributions} <= {1, 2} and broadcast.message.kind == Kind.UPDATE
    for c in contributions:  # indices relative to the owner's piece
        begin, end = policy.pieces[c.to]
        assert (c.message.offset, c.message.length) == (begin, end - begin)
    assert sum(len(c.message.indices) for c in contributions) <= 5  # 10% of 50
    changed = (params[0] != start).nonzero().squeeze(1)
    begin, end = policy.pieces[0]
    assert ((changed >= begin) & (changed < end)).all()  # only what its own piece broadcast


def test_messages_round_trip_through_the_codec_and_cost_what_they_encode_to() -> None:
    _, _, policies, net = run(SPARSE, clocks=4, deliver_every=1)
    finish_all(policies, net)
    assert_round_trips(net)
    assert sent_kinds(net) == {Kind.UPDATE, Kind.FLUSH}


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
