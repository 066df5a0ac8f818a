"""The geo policies driven by a tiny in-memory network: the rules, without a runtime."""

from collections import deque

import pytest
import torch
from geo_support import SIZE, Network, local_step, replicas, slices, train_together

from atoll.platform.geo.asp import ApproximateSync
from atoll.platform.geo.messages import BROADCAST, Kind, Lane
from atoll.platform.geo.mirror_clock import PROCEED, Wait
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.policy import GeoPolicy
from atoll.platform.geo.rounds import ProtocolError
from atoll.platform.geo.significance import ThresholdSchedule
from atoll.platform.geo.spec import GeoSpec


def run_asp(
    threshold: float, clocks: int, deliver_every: int, final: str = "flush"
) -> tuple[list[torch.Tensor], torch.Tensor, Network]:
    params = replicas(3)
    start = params[0].clone()
    policies = [
        ApproximateSync(where, schedule=ThresholdSchedule(threshold), staleness=clocks, final=final)
        for where in slices(params)
    ]
    net = Network(policies)
    steps = train_together(policies, net, clocks, deliver_every, seed=1)
    for i, policy in enumerate(policies):
        net.post(i, policy.finish(0.0))
    net.flush()
    assert all(p.done(0.0) for p in policies)
    return params, start + sum(steps), net


@pytest.mark.parametrize("deliver_every", [1, 7])
def test_after_the_final_flush_every_replica_holds_every_update(deliver_every: int) -> None:
    params, expected, _ = run_asp(threshold=0.05, clocks=30, deliver_every=deliver_every)
    for replica in params:
        assert torch.allclose(replica, expected, atol=1e-5)


def test_with_threshold_zero_and_instant_delivery_asp_is_bsp_every_clock() -> None:
    params = replicas(3)
    policies = [
        ApproximateSync(where, schedule=ThresholdSchedule(0.0), value_type="float32")
        for where in slices(params)
    ]
    net = Network(policies)
    generator = torch.Generator().manual_seed(2)
    expected = params[0].clone()
    for _ in range(5):
        deltas = []
        for i, policy in enumerate(policies):
            deltas.append(local_step(policy, generator))
            net.post(i, policy.after_clock(deltas[-1], 0.0))
        net.flush()
        expected += sum(deltas)  # each site's step is 1/N of its own: the sum is the mean step
        for replica in params:
            assert torch.allclose(replica, expected, atol=1e-6)


def test_insignificant_updates_are_held_back_and_sent_in_the_flush() -> None:
    params = replicas(2)
    policies = [
        ApproximateSync(where, schedule=ThresholdSchedule(10.0)) for where in slices(params)
    ]
    net = Network(policies)
    delta = torch.full((SIZE,), 1e-4)
    params[0] += delta
    net.post(0, policies[0].after_clock(delta, 0.0))
    net.flush()
    kinds = [out.message.kind for _, _, out in net.sent]
    assert kinds == [Kind.CLOCK]  # nothing significant: a tick only
    assert not torch.allclose(params[0], params[1])
    for i in range(2):
        net.post(i, policies[i].finish(0.0))
    net.flush()
    assert torch.allclose(params[0], params[1], atol=1e-7)


def test_a_congested_link_gets_the_indices_first_and_its_reader_waits_for_the_values() -> None:
    params = replicas(3)
    policies = [ApproximateSync(where, schedule=ThresholdSchedule(0.0)) for where in slices(params)]
    policies[0].link_backlog(2, seconds=1.0)  # the link to site 2 is backed up
    delta = torch.ones(SIZE) * 0.1
    out = policies[0].after_clock(delta, 0.0)
    notices = [o for o in out if o.message.kind == Kind.INDICES]
    assert [(o.to, o.lane) for o in notices] == [(2, Lane.CONTROL)]
    assert any(o.to == BROADCAST and o.message.kind == Kind.UPDATE for o in out)
    policies[2].receive(notices[0].message, 0.0)
    decision = policies[2].before_clock(1.0)
    assert isinstance(decision, Wait)
    assert "selective barrier" in decision.reason
    assert decision.on == (0,)
    update = next(o.message for o in out if o.message.kind == Kind.UPDATE)
    policies[2].receive(update, 3.0)
    assert policies[2].before_clock(3.0) is PROCEED
    assert policies[2].stall_s == pytest.approx(2.0)


def test_asp_mirror_clock_holds_a_site_ds_ahead() -> None:
    params = replicas(2)
    policies = [ApproximateSync(where, staleness=1) for where in slices(params)]
    for clock in range(2):
        assert policies[0].before_clock(float(clock)) is PROCEED
        policies[0].after_clock(torch.zeros(SIZE), float(clock))
    decision = policies[0].before_clock(2.0)  # 2 clocks done, mirror at 0
    assert isinstance(decision, Wait)
    assert decision.on == (1,)
    tick = policies[1].after_clock(torch.zeros(SIZE), 2.5)[0].message
    policies[0].receive(tick, 2.5)
    assert policies[0].before_clock(2.5) is PROCEED


def test_asp_looks_ahead_by_its_last_step_times_the_clocks_mirrors_owe() -> None:
    params = replicas(3)
    policies = [ApproximateSync(where, staleness=5, lookahead=0.5) for where in slices(params)]
    assert policies[0].lookahead(0.0) is None  # no step taken yet
    steps = [torch.full((SIZE,), 0.1 * (k + 1)) for k in range(3)]
    for clock, step in enumerate(steps):
        out = policies[0].after_clock(step, float(clock))
        if clock == 0:  # mirror 1 hears of clock 1; mirror 2 hears nothing
            policies[1].receive(out[-1].message, 0.5)
            policies[0].receive(policies[1].after_clock(torch.zeros(SIZE), 0.5)[0].message, 0.5)
    # 3 clocks done; mirror 1 delivered 1 of them, mirror 2 none: 2 + 3 missing clocks.
    assert torch.equal(policies[0].lookahead(3.0), steps[-1] * (0.5 * 5))
    # Mirror 2's lease ran out (mirror 1's runs until 0.5 + lease): only mirror 1 counts.
    lease = policies[0].mirror_clock.lease_s
    assert torch.equal(policies[0].lookahead(lease + 0.25), steps[-1] * (0.5 * 2))


def test_asp_takes_gradients_at_the_replica_without_a_lookahead() -> None:
    params = replicas(2)
    policy = ApproximateSync(slices(params)[0], staleness=5)
    policy.after_clock(torch.ones(SIZE), 0.0)
    assert policy.lookahead(1.0) is None


def test_a_restarted_site_adopts_a_mirrors_snapshot_before_training() -> None:
    params = replicas(2)
    policies = [ApproximateSync(where) for where in slices(params)]
    params[0] += 1.0
    policies[0].clock = 40
    hello = policies[1].rejoin()
    assert isinstance(policies[1].before_clock(0.0), Wait)
    [snapshot] = policies[0].receive(hello[0].message, 0.0)
    assert snapshot.to == 1
    assert snapshot.message.kind == Kind.SNAPSHOT
    policies[1].receive(snapshot.message, 0.0)
    assert torch.equal(params[1], params[0])
    assert policies[1].clock == 40
    assert policies[1].before_clock(0.0) is PROCEED


def run_rounds(
    spec: GeoSpec, clocks: int
) -> tuple[list[torch.Tensor], list[GeoPolicy], Network, list]:
    params = replicas(3)
    policies = [build_policy(spec, i, 3, params[i]) for i in range(3)]
    net = Network(policies)
    history = train_together(policies, net, clocks, deliver_every=1, seed=3)
    return params, policies, net, history


def test_bsp_leaves_every_clock_with_every_replica_at_the_mean_step() -> None:
    start = replicas(3)[0]
    params, _, net, history = run_rounds(GeoSpec(policy="bsp"), clocks=4)
    expected = start + sum(history) / 3
    for replica in params:
        assert torch.allclose(replica, expected, atol=1e-6)
    kinds = {out.message.kind for _, _, out in net.sent}
    assert kinds == {Kind.CONTRIB, Kind.RESULT}


def test_a_site_waits_for_the_round_to_close() -> None:
    params = replicas(2)
    policies = [build_policy(GeoSpec(policy="bsp"), i, 2, params[i]) for i in range(2)]
    out = policies[0].after_clock(torch.zeros(SIZE), 0.0)
    decision = policies[0].before_clock(0.0)
    assert isinstance(decision, Wait)
    assert decision.on == (1,)
    net = Network(policies)
    net.post(0, out)
    net.post(1, policies[1].after_clock(torch.zeros(SIZE), 0.0))
    net.flush()
    assert policies[0].before_clock(0.0) is PROCEED


def test_fedavg_talks_only_every_period() -> None:
    _, policies, net, _ = run_rounds(GeoSpec(policy="fedavg", period=3), clocks=5)
    assert {out.message.clock for _, _, out in net.sent} == {0}  # one round, after clock 3
    assert policies[0].stats()["rounds"] == 1


def test_diloco_applies_nesterov_to_the_mean_pseudo_gradient() -> None:
    start = replicas(3)[0]
    params, _, _, history = run_rounds(
        GeoSpec(policy="diloco", period=2, outer_lr=0.5, outer_momentum=0.9), 2
    )
    mean_change = sum(history) / 3
    # First outer step: buffer = g; Nesterov update = g + 0.9 g; g = -mean change.
    expected = start + 0.5 * 1.9 * mean_change
    for replica in params:
        assert torch.allclose(replica, expected, atol=1e-6)


def test_a_result_from_another_round_is_a_protocol_error() -> None:
    params = replicas(2)
    policy = build_policy(GeoSpec(policy="bsp"), 0, 2, params[0])
    other = build_policy(GeoSpec(policy="bsp"), 1, 2, params[1])
    result = next(
        o.message
        for o in other.after_clock(torch.zeros(SIZE), 0.0)
        if o.message.kind == Kind.CONTRIB
    )
    bogus = type(result)(Kind.RESULT, 1, 5, result.offset, result.length, None, result.values)
    with pytest.raises(ProtocolError, match="round 5 during round 0"):
        policy.receive(bogus, 0.0)


def test_isolated_sites_say_nothing() -> None:
    params = replicas(2)
    policy = build_policy(GeoSpec(policy="none"), 0, 2, params[0])
    assert policy.after_clock(torch.ones(SIZE), 0.0) == []
    assert policy.finish(0.0) == []
    assert policy.done(0.0)


def test_a_restarted_site_rejoins_a_bsp_round_that_waited_for_it() -> None:
    params = replicas(3)
    spec = GeoSpec(policy="bsp")
    policies = [build_policy(spec, i, 3, params[i]) for i in range(3)]
    net = Network(policies)
    generator = torch.Generator().manual_seed(6)
    for i in range(2):  # sites 0 and 1 contribute to round 0; site 2 dies before it does
        net.post(i, policies[i].after_clock(local_step(policies[i], generator), 0.0))
    # What was on its way to site 2's old process is lost with it.
    net.queue = deque((src, out) for src, out in net.queue if out.to != 2)
    net.flush()
    params[2] = torch.zeros(SIZE)
    restarted = build_policy(spec, 2, 3, params[2])
    policies[2] = restarted
    net.post(2, restarted.rejoin())
    assert isinstance(restarted.before_clock(0.0), Wait)
    for i in range(2):
        net.post(i, policies[i].mirror_restarted(2, 0.0))
    net.flush()
    assert restarted.before_clock(0.0) is PROCEED  # it took a mirror's replica
    assert torch.equal(params[2], params[0] - (params[0] - policies[0].anchor))
    net.post(2, restarted.after_clock(local_step(restarted, generator), 0.0))
    net.flush()
    assert all(p.round == 1 for p in policies)
    assert torch.allclose(params[0], params[1])
    assert torch.allclose(params[0], params[2])


# -- tracking asp --------------------------------------------------------------------


def run_tracking(
    spec: GeoSpec, clocks: int, deliver_every: int, sites: int = 3
) -> tuple[list[torch.Tensor], torch.Tensor, list[GeoPolicy], Network]:
    """Every site steps every clock; messages are delivered every `deliver_every` clocks
    and once more at the end, before any site finishes."""
    params = replicas(sites)
    start = params[0].clone()
    policies = [build_policy(spec, i, sites, params[i]) for i in range(sites)]
    net = Network(policies)
    steps = train_together(policies, net, clocks, deliver_every, seed=5)
    net.flush()
    return params, start + sum(steps), policies, net


# The start's exchange of label counts is left out: these tests are about the tracking.
DENSE_TRACKING = GeoSpec(
    exchange="tracking",
    density=1.0,
    density_floor=1.0,
    value_type="float32",
    staleness=9,
    sync_at_skew=None,
)
SPARSE_TRACKING = GeoSpec(
    exchange="tracking", density=0.1, density_floor=0.1, staleness=9, sync_at_skew=None
)


@pytest.mark.parametrize("deliver_every", [1, 3])
@pytest.mark.parametrize("decay", [1.0, 0.9, 0.0])
def test_dense_tracking_puts_every_replica_where_all_steps_lead_once_all_arrived(
    deliver_every: int, decay: float
) -> None:
    spec = DENSE_TRACKING.model_copy(update={"decay": decay})
    params, expected, _, _ = run_tracking(spec, clocks=6, deliver_every=deliver_every)
    for p in params:
        torch.testing.assert_close(p, expected)


@pytest.mark.parametrize("deliver_every", [1, 4])
def test_sparse_tracking_keeps_replicas_equal_once_all_arrived(deliver_every: int) -> None:
    spec = SPARSE_TRACKING
    params, expected, policies, net = run_tracking(spec, clocks=8, deliver_every=deliver_every)
    for p in params[1:]:
        torch.testing.assert_close(p, params[0])
    assert not torch.allclose(params[0], expected)  # what was not sent yet is still owed
    updates = [out.message for _, _, out in net.sent if out.message.kind == Kind.UPDATE]
    assert {len(m.indices) for m in updates if m.indices is not None} == {5}  # 10% of 50
    assert all(p.stats()["link_share"] == 0.1 for p in policies)


def test_tracking_starts_small_and_sends_less_when_a_link_backs_up() -> None:
    params = replicas(2)
    policy = build_policy(
        GeoSpec(exchange="tracking", density=0.2, density_floor=0.04, sync_at_skew=None),
        0,
        2,
        params[0],
    )
    generator = torch.Generator().manual_seed(2)
    sent = []
    for backlog in (0.0, 0.0, 0.0, 0.0, 1.0):
        policy.link_backlog(1, backlog)
        [out] = policy.after_clock(local_step(policy, generator), 0.0)
        assert out.message.indices is not None
        sent.append(len(out.message.indices))
    assert sent == [2, 2, 3, 4, 2]  # 4% of 50, growing 1.25x a clock, halved when congested


def test_tracking_looks_ahead_by_the_estimated_global_velocity() -> None:
    spec = DENSE_TRACKING.model_copy(update={"lookahead": 0.5, "decay": 1.0})
    _, _, policies, _ = run_tracking(spec, clocks=3, deliver_every=1)
    offset = policies[0].lookahead(0.0)
    assert offset is not None
    velocity = sum(p.estimates[i] for i, p in enumerate(policies))  # type: ignore[attr-defined]
    torch.testing.assert_close(offset, 0.5 * velocity)


def test_a_restarted_tracking_site_gets_a_snapshot_and_each_mirrors_estimate() -> None:
    spec = SPARSE_TRACKING
    params, _, policies, _ = run_tracking(spec, clocks=4, deliver_every=1, sites=2)
    fresh = build_policy(spec, 1, 2, torch.zeros(SIZE))
    hello = fresh.rejoin()
    replies = policies[0].receive(hello[0].message, 0.0)
    assert [r.message.kind for r in replies] == [Kind.SNAPSHOT, Kind.ESTIMATE]
    for reply in replies:
        fresh.receive(reply.message, 0.0)
    torch.testing.assert_close(fresh.params, params[0])
    assert torch.equal(fresh.estimates[0], policies[0].estimates[0])  # type: ignore[attr-defined]
    assert not policies[0].estimates[1].any()  # type: ignore[attr-defined]
    assert fresh.before_clock(0.0) is PROCEED


def test_a_capped_release_sends_no_more_than_the_links_share() -> None:
    params = replicas(2)
    spec = GeoSpec(
        exchange="release", threshold=0.0, density=0.2, density_floor=0.1, sync_at_skew=None
    )
    policy = build_policy(spec, 0, 2, params[0])
    generator = torch.Generator().manual_seed(4)
    sent = []
    for backlog in (0.0, 0.0, 0.0, 1.0):
        policy.link_backlog(1, backlog)
        *_, update = policy.after_clock(local_step(policy, generator), 0.0)  # after notices
        assert update.message.kind == Kind.UPDATE and update.message.indices is not None
        sent.append(len(update.message.indices))
    assert sent == [5, 6, 8, 5]  # 10% of 50 at first, 1.25x a clock, halved when backed up
    assert policy.stats()["congested_clocks"] == 1
