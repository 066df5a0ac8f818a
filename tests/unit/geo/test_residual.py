"""What the sharded and direct exchanges share (`residual.py`): the mirror clock's waits,
the lookahead from the site's own step, and a share that follows the links."""

import pytest
import torch
from geo_support import Network, exchange_spec, local_step, replicas, train_together

from atoll.platform.geo.mirror_clock import PROCEED, Wait
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.residual import ResidualSync
from atoll.platform.geo.spec import Exchange, GeoSpec

EXCHANGES = pytest.mark.parametrize("exchange", ["sharded", "direct"])


def sites(spec: GeoSpec, count: int) -> list[ResidualSync]:
    params = replicas(count)
    policies = [build_policy(spec, i, count, params[i]) for i in range(count)]
    assert all(isinstance(p, ResidualSync) for p in policies)
    return policies  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("exchange", "waits_on"),
    # Sharded, site 0 waits on owners' rounds, and owner 1 cannot close one without site 2.
    [("direct", (2,)), ("sharded", (1, 2))],
)
def test_a_site_waits_for_mirrors_ds_clocks_behind_and_names_them(
    exchange: Exchange, waits_on: tuple[int, ...]
) -> None:
    policies = sites(exchange_spec(exchange, staleness=1), 3)
    net = Network(policies)
    generator = torch.Generator().manual_seed(2)

    def step(site: int, now: float) -> None:
        assert policies[site].before_clock(now) is PROCEED
        net.post(site, policies[site].after_clock(local_step(policies[site], generator), now))

    step(0, 0.0)
    step(0, 0.0)
    step(1, 0.5)
    net.flush(0.5)
    decision = policies[0].before_clock(1.0)
    assert isinstance(decision, Wait)
    assert decision.on == waits_on
    step(2, 1.5)
    net.flush(2.0)
    assert policies[0].before_clock(2.0) is PROCEED
    assert policies[0].stall_s == pytest.approx(1.0)


@EXCHANGES
@pytest.mark.parametrize(("clocks_unheard", "owed"), [(2, 2), (10, 3)])
def test_the_lookahead_is_the_own_step_as_a_mean_times_what_the_mirrors_owe(
    exchange: Exchange, clocks_unheard: int, owed: int
) -> None:
    # Capped at DS: a mirror further behind has just come back (or this site has), and
    # extrapolating over all it owes blew a replica up in the real runtime.
    ahead = exchange_spec(exchange, dense=True, lookahead=0.5, staleness=3)
    policies = sites(ahead, 3)
    train_together(policies, net := Network(policies), 3, deliver_every=1, seed=3)
    net.flush()
    policy = policies[0]
    assert policy.lookahead(0.0) is None  # everything applied: nothing to look ahead for
    for _ in range(clocks_unheard):  # clocks the mirrors have not answered
        step = local_step(policy, torch.Generator().manual_seed(7))
        policy.after_clock(step, 0.0)
    offset = policy.lookahead(0.0)
    assert offset is not None
    torch.testing.assert_close(offset, step * 3 * (0.5 * owed))  # 3 sites
    assert sites(ahead, 1)[0].lookahead(0.0) is None  # no clock yet


@EXCHANGES
def test_what_is_sent_starts_at_the_floor_and_follows_the_links(exchange: Exchange) -> None:
    [policy, _] = sites(
        exchange_spec(exchange, density=0.4, density_floor=0.2, value_type="float32"), 2
    )
    generator = torch.Generator().manual_seed(4)
    taken = []
    for backlog in (0.0, 0.0, 0.0, 1.0):
        policy.link_backlog(1, backlog)
        policy.after_clock(local_step(policy, generator), 0.0)
        taken.append(int((policy.residual == 0).sum()))  # float32: what went out is all gone
    assert taken == [10, 12, 16, 10]  # 20% of 50 at first, 1.25x a clock, then back to the floor
    assert policy.stats()["congested_clocks"] == 1
