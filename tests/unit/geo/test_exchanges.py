"""What the direct and the sharded asp exchange both promise, on a tiny in-memory network:
replicas that agree, error feedback that loses no step, a closing round that puts every
replica where all steps lead, and messages that cost what they encode to. What each does
its own way: test_direct.py and test_sharded.py."""

import pytest
import torch
from geo_support import (
    Network,
    assert_round_trips,
    exchange_spec,
    finish_all,
    run_exchange,
    sent_kinds,
)

from atoll.platform.geo.direct import DirectSync
from atoll.platform.geo.messages import Kind
from atoll.platform.geo.policy import GeoPolicy
from atoll.platform.geo.sharded import ShardedSync
from atoll.platform.geo.spec import Exchange

POLICIES: dict[Exchange, type[GeoPolicy]] = {"direct": DirectSync, "sharded": ShardedSync}
# How far replicas may differ before the closing round: a direct replica adds the steps in
# the order they arrive; a sharded piece adds them in its owner's order, to the bit.
DRIFT = {"direct": 1e-6, "sharded": 0.0}
# What a run ending with the flush sends: direct's closing round also sends each piece's
# owner contributions, and the owner its result.
KINDS = {
    "direct": {Kind.UPDATE, Kind.FLUSH, Kind.CONTRIB, Kind.RESULT},
    "sharded": {Kind.UPDATE, Kind.FLUSH},
}


def run(
    exchange: Exchange, clocks: int, deliver_every: int, dense: bool = False, **update: object
) -> tuple[list[torch.Tensor], torch.Tensor, list[GeoPolicy], Network]:
    spec = exchange_spec(exchange, dense, **update)
    return run_exchange(spec, POLICIES[exchange], clocks, deliver_every)


def held_back(policies: list[GeoPolicy]) -> torch.Tensor:
    """What the sites' error feedback holds back: their residuals, and each sharded owner's
    aggregate of its piece."""
    held = sum(p.residual for p in policies)
    for p in policies:
        if isinstance(p, ShardedSync):
            start, end = p.pieces[p.site]
            held[start:end] += p.aggregate
    return held


dense_and_sparse = pytest.mark.parametrize("dense", [True, False], ids=["dense", "sparse"])


@pytest.mark.parametrize("exchange", POLICIES)
@dense_and_sparse
@pytest.mark.parametrize("deliver_every", [1, 4])
def test_replicas_agree_once_every_message_arrived(
    exchange: Exchange, dense: bool, deliver_every: int
) -> None:
    params, expected, _, _ = run(exchange, clocks=8, deliver_every=deliver_every, dense=dense)
    for p in params[1:]:
        torch.testing.assert_close(p, params[0], atol=DRIFT[exchange], rtol=0)
    # Dense, every step has gone out in full; sparse, the residuals (and the sharded
    # owners' aggregates) still hold some.
    assert torch.allclose(params[0], expected, atol=1e-6) == dense


# Direct ending with the average lands on the replicas' mean instead (test_direct.py).
@pytest.mark.parametrize(
    ("exchange", "final"), [("direct", "flush"), ("sharded", "flush"), ("sharded", "average")]
)
@dense_and_sparse
@pytest.mark.parametrize("deliver_every", [1, 4])
def test_the_closing_round_puts_every_replica_where_all_steps_lead(
    exchange: Exchange, final: str, dense: bool, deliver_every: int
) -> None:
    params, expected, policies, net = run(
        exchange, clocks=8, deliver_every=deliver_every, dense=dense, final=final
    )
    finish_all(policies, net)
    for p in params:
        assert torch.equal(p, params[0])  # each piece: its owner's values
        torch.testing.assert_close(p, expected, atol=1e-4, rtol=0)  # float16 rounding is left


@pytest.mark.parametrize("exchange", POLICIES)
def test_messages_round_trip_through_the_codec_and_cost_what_they_encode_to(
    exchange: Exchange,
) -> None:
    _, _, policies, net = run(exchange, clocks=4, deliver_every=1)
    finish_all(policies, net)
    assert_round_trips(net)
    assert sent_kinds(net) == KINDS[exchange]


@pytest.mark.parametrize("exchange", POLICIES)
@pytest.mark.parametrize("value_type", ["float16", "int8"])
def test_error_feedback_conserves_every_step(exchange: Exchange, value_type: str) -> None:
    params, expected, policies, _ = run(exchange, clocks=6, deliver_every=2, value_type=value_type)
    # Applied (the replica) + held back = every step taken.
    torch.testing.assert_close(params[0] + held_back(policies), expected, atol=1e-6, rtol=0)
