"""Direct asp on a tiny in-memory network: one hop, the closing round, a restart (what it
shares with the sharded exchange: test_exchanges.py)."""

import functools

import pytest
import torch
from geo_support import (
    exchange_spec,
    finish_all,
    first_clock,
    local_step,
    restarted,
    run_exchange,
    sent_kinds,
    train_together,
)

from atoll.platform.geo.direct import DirectSync
from atoll.platform.geo.messages import BROADCAST, Kind
from atoll.platform.geo.mirror_clock import PROCEED

SPARSE = exchange_spec("direct")
run = functools.partial(run_exchange, kind=DirectSync)


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


@pytest.mark.parametrize("deliver_every", [1, 4])
def test_the_closing_round_sends_the_residuals_as_steps_travel(deliver_every: int) -> None:
    _, _, policies, net = run(SPARSE, clocks=8, deliver_every=deliver_every)
    finish_all(policies, net)
    assert all(p.residual.abs().sum() == 0 for p in policies)
    # The closing round's changes are residual steps: they travel as steps do.
    contributions = [out.message for _, _, out in net.sent if out.message.kind == Kind.CONTRIB]
    assert contributions and all(m.values.dtype == torch.float16 for m in contributions)


def test_a_site_moves_only_by_what_it_sends_and_sends_it_to_every_mirror() -> None:
    _, moved, [update] = first_clock(SPARSE, DirectSync)
    assert update.to == BROADCAST and update.message.kind == Kind.UPDATE
    assert update.message.indices is not None and len(update.message.indices) == 5  # 10% of 50
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
