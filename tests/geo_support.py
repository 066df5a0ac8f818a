"""Geo policies on a tiny in-memory network: the helpers the policy tests share."""

from collections import deque
from typing import TypeVar

import torch

from atoll.platform.geo.codec import decode, encode, encoded_size
from atoll.platform.geo.messages import BROADCAST, Kind, Outbound
from atoll.platform.geo.mirror_clock import PROCEED, Wait
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.policy import GeoPolicy, SiteSlice
from atoll.platform.geo.spec import Exchange, GeoSpec

SIZE = 50


class Network:
    """Delivers every outbound message, in order, when `flush` is called."""

    def __init__(self, policies: list[GeoPolicy]) -> None:
        self.policies = policies
        self.queue: deque[tuple[int, Outbound]] = deque()
        self.sent: list[tuple[int, int, Outbound]] = []

    def post(self, source: int, outbound: list[Outbound]) -> None:
        self.queue.extend((source, out) for out in outbound)

    def flush(self, now: float = 0.0) -> None:
        while self.queue:
            source, out = self.queue.popleft()
            targets = self.policies[source].mirrors if out.to == BROADCAST else [out.to]
            for target in targets:
                self.sent.append((source, target, out))
                self.post(target, self.policies[target].receive(out.message, now))


def replicas(count: int, seed: int = 0) -> list[torch.Tensor]:
    start = torch.randn(SIZE, generator=torch.Generator().manual_seed(seed))
    return [start.clone() for _ in range(count)]


def slices(params: list[torch.Tensor]) -> list[SiteSlice]:
    """One site for each replica: site i owns `params[i]`, the whole vector."""
    return [SiteSlice(i, len(params), p) for i, p in enumerate(params)]


def local_step(policy: GeoPolicy, generator: torch.Generator, scale: float = 0.01) -> torch.Tensor:
    """What a site's optimizer would do: change params, scaled as the policy asks."""
    delta = torch.randn(SIZE, generator=generator) * scale * policy.update_scale
    policy.params += delta
    return delta


def train_together(
    policies: list[GeoPolicy], net: Network, clocks: int, deliver_every: int, seed: int
) -> list[torch.Tensor]:
    """Every site steps every clock, never told to wait; the network delivers after every
    `deliver_every`-th clock. Returns each step taken, in order."""
    generator = torch.Generator().manual_seed(seed)
    steps = []
    for clock in range(1, clocks + 1):
        for i, policy in enumerate(policies):
            assert policy.before_clock(0.0) is PROCEED
            steps.append(local_step(policy, generator))
            net.post(i, policy.after_clock(steps[-1], 0.0))
        if clock % deliver_every == 0:
            net.flush()
    return steps


P = TypeVar("P", bound=GeoPolicy)


def exchange_spec(exchange: Exchange, dense: bool = False, **update: object) -> GeoSpec:
    """asp with `exchange` for the tiny network: 10% a clock (dense: every element, as
    float32), no waits (nor the start's exchange of label counts), no lookahead, ending
    with the flush."""
    spec = GeoSpec(
        exchange=exchange,
        density=0.1,
        density_floor=0.1,
        staleness=9,
        lookahead=0,
        final="flush",
        sync_at_skew=None,
    )
    if dense:
        spec = spec.model_copy(
            update={"density": 1.0, "density_floor": 1.0, "value_type": "float32"}
        )
    return spec.model_copy(update=update)


def run_exchange(
    spec: GeoSpec, kind: type[P], clocks: int, deliver_every: int, sites: int = 3
) -> tuple[list[torch.Tensor], torch.Tensor, list[P], Network]:
    """`sites` sites of `spec` step every clock; messages are delivered every
    `deliver_every` clocks and once more at the end. Returns the replicas, start + every
    step, the policies and the network."""
    params = replicas(sites)
    start = params[0].clone()
    policies = [build_policy(spec, i, sites, params[i]) for i in range(sites)]
    assert all(isinstance(p, kind) for p in policies)
    net = Network(policies)
    steps = train_together(policies, net, clocks, deliver_every, seed=3)
    net.flush()
    return params, start + sum(steps), policies, net  # type: ignore[return-value]


def finish_all(policies: list[P], net: Network) -> None:
    """Every site finishes; every message is delivered; every site is done."""
    for i, policy in enumerate(policies):
        net.post(i, policy.finish(0.0))
    net.flush()
    assert all(p.done(0.0) for p in policies)


def restarted(spec: GeoSpec, kind: type[P], site: int, sites: int = 3) -> tuple[P, Outbound]:
    """Site `site` of `sites` after a restart, its replica lost: waiting for a snapshot,
    with the HELLO that asks the mirrors for one."""
    fresh = build_policy(spec, site, sites, torch.zeros(SIZE))
    assert isinstance(fresh, kind)
    [hello] = fresh.rejoin()
    assert isinstance(fresh.before_clock(0.0), Wait)
    return fresh, hello


def first_clock(spec: GeoSpec, kind: type[P]) -> tuple[P, torch.Tensor, list[Outbound]]:
    """Site 0 of 3 takes one step: its policy, how far its replica moved, what it sent."""
    params = replicas(3)[0]
    start = params.clone()
    policy = build_policy(spec, 0, 3, params)
    assert isinstance(policy, kind)
    outbound = policy.after_clock(local_step(policy, torch.Generator().manual_seed(1)), 0.0)
    return policy, params - start, outbound


def sent_kinds(net: Network) -> set[Kind]:
    return {out.message.kind for _, _, out in net.sent}


def assert_round_trips(net: Network) -> None:
    """Every message sent decodes to itself and costs what the codec says it encodes to
    (the size the links count)."""
    for _, _, out in net.sent:
        message = out.message
        data = encode(message)
        assert len(data) == encoded_size(message)
        back = decode(data)
        assert (back.kind, back.origin, back.clock) == (message.kind, message.origin, message.clock)
        assert (back.offset, back.length) == (message.offset, message.length)
        if message.indices is not None:
            assert torch.equal(back.indices, message.indices)
        if message.values is not None:
            assert torch.equal(back.float_values(), message.float_values())
