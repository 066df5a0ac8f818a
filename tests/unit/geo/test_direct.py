"""Direct asp on a tiny in-memory network: one hop, error feedback, the closing flush."""

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
    train_together,
)

from atoll.platform.geo.direct import DirectSync
from atoll.platform.geo.messages import BROADCAST, Kind
from atoll.platform.geo.mirror_clock import PROCEED
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.spec import GeoSpec

SPARSE, DENSE = exchange_spec("direct"), exchange_spec("direct", dense=True)


def run(
    spec: GeoSpec, clocks: int, deliver_every: int, sites: int = 3
) -> tuple[list[torch.Tensor], torch.Tensor, list[DirectSync], Network]:
    return run_exchange(spec, DirectSync, clocks, deliver_every, sites)


@pytest.mark.parametrize("spec", [DENSE, SPARSE], ids=["dense", "sparse"])
@pytest.mark.parametrize("deliver_every", [1, 4])
def test_replicas_agree_once_every_message_arrived(spec: GeoSpec, deliver_every: int) -> None:
    params, expected, _, _ = run(spec, clocks=8, deliver_every=deliver_every)
    for p in params[1:]:  # the same messages, added in different orders
        torch.testing.assert_close(p, params[0], atol=1e-6, rtol=0)
    # Dense, every step has gone out in full; sparse, the residuals still hold some.
    assert torch.allclose(params[0], expected, atol=1e-6) == (spec is DENSE)


@pytest.mark.parametrize("spec", [DENSE, SPARSE], ids=["dense", "sparse"])
@pytest.mark.parametrize("deliver_every", [1, 4])
def test_the_closing_round_puts_every_replica_where_all_steps_lead(
    spec: GeoSpec, deliver_every: int
) -> None:
    params, expected, policies, net = run(spec, clocks=8, deliver_every=deliver_every)
    finish_all(policies, net)
    for p in params:
        assert torch.equal(p, params[0])  # each piece: its owner's values
        torch.testing.assert_close(p, expected, atol=1e-4, rtol=0)  # float16 rounding is left
    assert all(p.residual.abs().sum() == 0 for p in policies)
    assert sent_kinds(net) == {Kind.UPDATE, Kind.FLUSH, Kind.CONTRIB, Kind.RESULT}


def test_ending_with_the_average_makes_replicas_equal_and_drops_the_residuals() -> None:
    spec = SPARSE.model_copy(update={"final": "average"})
    params, _, policies, net = run(spec, clocks=8, deliver_every=4)
    mean = sum(params) / len(params)
    finish_all(policies, net)
    for p in params:
        torch.testing.assert_close(p, mean, atol=1e-6, rtol=0)


def test_the_closing_round_waits_for_every_mirror_to_be_done() -> None:
    _, _, policies, net = run(SPARSE, clocks=4, deliver_every=1)
    net.post(0, policies[0].finish(0.0))
    net.post(1, policies[1].finish(0.0))
    net.flush()
    assert not any(p.done(0.0) for p in policies)
    assert not any(kind in (Kind.CONTRIB, Kind.RESULT) for kind in sent_kinds(net))
    net.post(2, policies[2].finish(0.0))
    net.flush()
    assert all(p.done(0.0) for p in policies)


def test_messages_round_trip_through_the_codec_and_cost_what_they_encode_to() -> None:
    _, _, policies, net = run(SPARSE, clocks=4, deliver_every=1)
    finish_all(policies, net)
    assert_round_trips(net)
    # The closing round's changes are residual steps: they travel as steps do.
    contributions = [out.message for _, _, out in net.sent if out.message.kind == Kind.CONTRIB]
    assert contributions and all(m.values.dtype == torch.float16 for m in contributions)


@pytest.mark.parametrize("value_type", ["float16", "int8"])
def test_error_feedback_conserves_every_step(value_type: str) -> None:
    spec = SPARSE.model_copy(update={"value_type": value_type})
    params, expected, policies, _ = run(spec, clocks=6, deliver_every=2)
    held = sum(p.residual for p in policies)
    # Applied (the replica) + held back (the residuals) = every step taken.
    torch.testing.assert_close(params[0] + held, expected, atol=1e-6, rtol=0)


def test_a_site_moves_only_by_what_it_sends_and_sends_it_to_every_mirror() -> None:
    params = replicas(3)
    start = params[0].clone()
    policy = build_policy(SPARSE, 0, 3, params[0])
    assert isinstance(policy, DirectSync)
    step = local_step(policy, torch.Generator().manual_seed(1))
    [update] = policy.after_clock(step, 0.0)
    assert update.to == BROADCAST and update.message.kind == Kind.UPDATE
    assert update.message.indices is not None and len(update.message.indices) == 5  # 10% of 50
    moved = params[0] - start
    changed = moved.nonzero().squeeze(1)
    assert torch.equal(changed, update.message.indices)
    torch.testing.assert_close(moved[changed], update.message.float_values())


def test_a_restarted_site_adopts_a_snapshot_and_the_job_ends_with_equal_replicas() -> None:
    params, _, policies, net = run(SPARSE, clocks=4, deliver_every=1)
    # Site 1 restarts; an update reaches site 0 but not the site that restarted.
    [update] = policies[2].after_clock(local_step(policies[2], torch.Generator()), 0.0)
    fresh, hello = restarted(SPARSE, DirectSync, site=1)
    [snapshot] = policies[0].receive(hello.message, 0.0)
    policies[0].receive(update.message, 0.0)
    fresh.receive(snapshot.message, 0.0)
    assert torch.equal(fresh.params, params[1])  # site 0's replica before the update
    assert fresh.clock == policies[0].clock and fresh.before_clock(0.0) is PROCEED
    assert not torch.equal(params[0], fresh.params)
    policies[1], params[1] = fresh, fresh.params
    train_together(policies, net, clocks=2, deliver_every=1, seed=5)
    net.flush()
    finish_all(policies, net)
    for p in params[1:]:
        assert torch.equal(p, params[0])
