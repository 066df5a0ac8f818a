"""Sharded asp on a tiny in-memory network: owners, error feedback, the closing flush."""

import pytest
import torch
from geo_support import SIZE, Network, local_step, replicas, train_together

from atoll.platform.geo.codec import decode, encode, encoded_size
from atoll.platform.geo.messages import Kind
from atoll.platform.geo.mirror_clock import PROCEED, Wait
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.sharded import ShardedSync
from atoll.platform.geo.spec import GeoSpec

SPARSE = GeoSpec(
    exchange="sharded", density=0.1, density_floor=0.1, staleness=9, lookahead=0, final="flush"
)
DENSE = SPARSE.model_copy(update={"density": 1.0, "density_floor": 1.0, "value_type": "float32"})


def run(
    spec: GeoSpec, clocks: int, deliver_every: int, sites: int = 3
) -> tuple[list[torch.Tensor], torch.Tensor, list[ShardedSync], Network]:
    """Every site steps every clock; messages are delivered every `deliver_every` clocks
    and once more at the end. Returns the replicas, start + every step, the policies."""
    params = replicas(sites)
    start = params[0].clone()
    policies = [build_policy(spec, i, sites, params[i]) for i in range(sites)]
    assert all(isinstance(p, ShardedSync) for p in policies)
    net = Network(policies)
    steps = train_together(policies, net, clocks, deliver_every, seed=3)
    net.flush()
    return params, start + sum(steps), policies, net  # type: ignore[return-value]


def finish(policies: list[ShardedSync], net: Network) -> None:
    for i, policy in enumerate(policies):
        net.post(i, policy.finish(0.0))
    net.flush()
    assert all(p.done(0.0) for p in policies)


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
    finish(policies, net)
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
    finish(policies, net)
    kinds = set()
    for _, _, out in net.sent:
        message = out.message
        kinds.add(message.kind)
        data = encode(message)
        assert len(data) == encoded_size(message)
        back = decode(data)
        assert (back.kind, back.origin, back.clock) == (message.kind, message.origin, message.clock)
        assert (back.offset, back.length) == (message.offset, message.length)
        if message.indices is not None:
            assert torch.equal(back.indices, message.indices)
        if message.values is not None:
            assert torch.equal(back.float_values(), message.float_values())
    assert kinds == {Kind.UPDATE, Kind.FLUSH}


def test_a_site_waits_for_an_owner_ds_clocks_behind_and_names_it() -> None:
    params = replicas(3)
    spec = SPARSE.model_copy(update={"staleness": 1})
    policies = [build_policy(spec, i, 3, params[i]) for i in range(3)]
    generator = torch.Generator().manual_seed(2)
    for _ in range(2):
        assert policies[0].before_clock(0.0) is PROCEED
        policies[0].after_clock(local_step(policies[0], generator), 0.0)
    [*_, broadcast] = policies[1].after_clock(local_step(policies[1], generator), 0.5)
    policies[0].receive(broadcast.message, 0.5)
    decision = policies[0].before_clock(1.0)
    assert isinstance(decision, Wait) and decision.on == (2,)
    [*_, broadcast] = policies[2].after_clock(local_step(policies[2], generator), 1.5)
    policies[0].receive(broadcast.message, 2.0)
    assert policies[0].before_clock(2.0) is PROCEED
    assert policies[0].stall_s == pytest.approx(1.0)


def test_the_lookahead_is_the_own_step_as_a_mean_times_the_rounds_owed() -> None:
    spec = DENSE.model_copy(update={"lookahead": 0.5})
    _, _, policies, _ = run(spec, clocks=3, deliver_every=1)
    policy = policies[0]
    assert policy.lookahead(0.0) is None  # every round applied: nothing to look ahead for
    for _ in range(2):  # two clocks whose rounds nobody has closed yet
        step = local_step(policy, torch.Generator().manual_seed(7))
        policy.after_clock(step, 0.0)
    offset = policy.lookahead(0.0)
    assert offset is not None
    torch.testing.assert_close(offset, step * 3 * (0.5 * 2))  # 3 sites, 2 rounds owed
    assert build_policy(spec, 0, 3, replicas(1)[0]).lookahead(0.0) is None  # no clock yet


def test_the_lookahead_predicts_at_most_ds_rounds_of_an_owner_that_fell_further_behind() -> None:
    # An owner more than DS rounds behind a live site has just come back (or the site
    # has): extrapolating over every round it owes blew a replica up in the real runtime.
    spec = DENSE.model_copy(update={"lookahead": 0.5, "staleness": 2})
    _, _, policies, _ = run(spec, clocks=3, deliver_every=1)
    policy = policies[0]
    for _ in range(10):  # ten clocks whose rounds nobody closes: the owners fell behind
        step = local_step(policy, torch.Generator().manual_seed(7))
        policy.after_clock(step, 0.0)
    offset = policy.lookahead(0.0)
    assert offset is not None
    torch.testing.assert_close(offset, step * 3 * (0.5 * 2))  # DS rounds, not ten


def test_a_restarted_site_adopts_a_snapshot_and_keeps_contributions_to_its_piece() -> None:
    params, _, policies, _ = run(SPARSE, clocks=4, deliver_every=1)
    fresh = build_policy(SPARSE, 1, 3, torch.zeros(SIZE))
    assert isinstance(fresh, ShardedSync)
    [hello] = fresh.rejoin()
    assert isinstance(fresh.before_clock(0.0), Wait)
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


def test_contributions_start_at_the_floor_and_follow_the_links() -> None:
    params = replicas(2)
    spec = SPARSE.model_copy(update={"density": 0.4, "density_floor": 0.2, "value_type": "float32"})
    policy = build_policy(spec, 0, 2, params[0])
    assert isinstance(policy, ShardedSync)
    generator = torch.Generator().manual_seed(4)
    taken = []
    for backlog in (0.0, 0.0, 0.0, 1.0):
        policy.link_backlog(1, backlog)
        out = policy.after_clock(local_step(policy, generator), 0.0)
        assert out[-1].message.kind == Kind.UPDATE  # the owner's broadcast, every clock
        taken.append(int((policy.residual == 0).sum()))  # float32: what went out is all gone
    assert taken == [10, 12, 16, 10]  # 20% of 50 at first, 1.25x a clock, then back to the floor
    assert policy.stats()["congested_clocks"] == 1
