"""Skew-aware staleness: the measure, the bound, and sites that agree on it at the start."""

import pytest
import torch
from geo_support import SIZE, Network, local_step, replicas

from atoll.platform.geo.codec import decode, encode
from atoll.platform.geo.messages import GeoMessage, Kind
from atoll.platform.geo.mirror_clock import PROCEED
from atoll.platform.geo.policies import build_policy
from atoll.platform.geo.rounds import ProtocolError
from atoll.platform.geo.skew import label_skew, staleness_for
from atoll.platform.geo.spec import GeoSpec


def counts(*rows: list[int]) -> list[torch.Tensor]:
    return [torch.tensor(row) for row in rows]


# Five sites, each with two classes of ten.
TWO_OF_TEN = counts(*[[9 if c // 2 == s else 0 for c in range(10)] for s in range(5)])


@pytest.mark.parametrize(
    ("sites", "skew"),
    [
        (counts([5, 5, 5, 5]), 0.0),  # one site: the pooled mix is its own
        (counts([3, 3, 3, 3], [6, 6, 6, 6]), 0.0),  # the same mix, whatever the sizes
        (counts([4, 0], [0, 4]), 0.5),  # one class each of two
        (counts([5, 5, 0, 0, 0], [0, 0, 5, 5, 0]), 0.5),  # a class no site holds adds nothing
        (TWO_OF_TEN, 0.8),
        (counts([4, 0], [0, 4], [0, 0]), 0.5),  # a site without samples does not count
        (counts([0, 0]), 0.0),
        (counts([1, 3], [3, 1]), 0.25),
    ],
)
def test_label_skew_is_the_mean_total_variation_from_the_pooled_mix(
    sites: list[torch.Tensor], skew: float
) -> None:
    assert label_skew(sites) == pytest.approx(skew)


@pytest.mark.parametrize(
    ("sites", "problem"),
    [([], "at least one"), (counts([1, -1]), "negative"), (counts([1, 1], [1, 1, 1]), "classes")],
)
def test_label_skew_names_bad_counts(sites: list[torch.Tensor], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        label_skew(sites)


@pytest.mark.parametrize(
    ("skew", "staleness", "limit", "bound"),
    [(0.8, 3, 0.6, 0), (0.6, 3, 0.6, 0), (0.59, 3, 0.6, 3), (0.9, 3, None, 3), (0.0, 2, 0.0, 0)],
)
def test_a_federation_at_or_above_the_limit_runs_synchronously(
    skew: float, staleness: int, limit: float | None, bound: int
) -> None:
    assert staleness_for(skew, staleness, limit) == bound


SPEC = GeoSpec(staleness=3, lookahead=0, sync_at_skew=0.6)


def started(labels: list[torch.Tensor | None], spec: GeoSpec = SPEC) -> list:
    """Sites of `spec` with these class counts, after every one's first clock, delivered."""
    params = replicas(len(labels))
    policies = [
        build_policy(spec, i, len(labels), params[i], class_counts=labels[i])
        for i in range(len(labels))
    ]
    net = Network(policies)
    generator = torch.Generator().manual_seed(0)
    for i, policy in enumerate(policies):
        assert policy.before_clock(0.0) is PROCEED
        net.post(i, policy.after_clock(local_step(policy, generator), 0.0))
    # Before the counts arrive nobody waits for them, and DS is as set.
    assert policies[0].before_clock(0.0) is PROCEED
    assert policies[0].label_skew is None and policies[0].mirror_clock.staleness == 3
    net.flush()
    for policy in policies:
        assert policy.before_clock(0.0) is PROCEED
    return policies


def test_two_class_sites_agree_to_run_synchronously() -> None:
    policies = started(counts([5, 5, 0, 0], [0, 0, 5, 5]))
    for policy in policies:
        assert policy.label_skew == pytest.approx(0.5)
        assert policy.stats()["staleness"] == 3  # 0.5 is under the limit of 0.6
        assert policy.budget.ceiling == SPEC.density
    policies = started(counts([5, 0, 0, 0], [0, 5, 0, 0], [0, 0, 5, 5]))
    for policy in policies:
        assert policy.label_skew == pytest.approx(2 / 3)
        assert policy.mirror_clock.staleness == 0
        assert policy.stats()["label_skew"] == pytest.approx(2 / 3)
        # Synchronous, the share may grow further: a clock waits out the latency anyway.
        assert policy.budget.ceiling == SPEC.sync_density


def test_a_site_that_does_not_know_its_labels_leaves_ds_as_set() -> None:
    policies = started([torch.tensor([5, 0]), None, torch.tensor([0, 5])])
    for policy in policies:
        assert policy.label_skew is None
        assert policy.mirror_clock.staleness == 3


def test_without_a_limit_nothing_is_exchanged_and_nothing_waits() -> None:
    params = replicas(2)
    spec = SPEC.model_copy(update={"sync_at_skew": None})
    policy = build_policy(spec, 0, 2, params[0], class_counts=torch.tensor([5, 0]))
    out = policy.after_clock(local_step(policy, torch.Generator().manual_seed(0)), 0.0)
    assert Kind.CLASS_COUNTS not in {o.message.kind for o in out}
    assert policy.before_clock(0.0) is PROCEED


def test_a_mirror_that_never_shows_up_is_measured_without_after_its_lease() -> None:
    params = replicas(2)
    policy = build_policy(SPEC, 0, 2, params[0], class_counts=torch.tensor([5, 0]))
    policy.after_clock(local_step(policy, torch.Generator().manual_seed(0)), 0.0)
    assert policy.before_clock(1.0) is PROCEED
    assert policy.label_skew is None  # still expecting the mirror's counts
    after_lease = SPEC.lease_s + 1.0
    assert policy.before_clock(after_lease) is PROCEED
    assert policy.label_skew == 0.0  # only its own counts: nothing to differ from


def test_a_restarted_site_gets_each_mirrors_counts_with_its_snapshot() -> None:
    policies = started(counts([5, 0, 0], [0, 5, 0], [0, 0, 5]))
    fresh = build_policy(SPEC, 1, 3, torch.zeros(SIZE), class_counts=torch.tensor([0, 5, 0]))
    hello, labels = fresh.rejoin()
    assert labels.message.kind == Kind.CLASS_COUNTS
    for mirror in (0, 2):
        for reply in policies[mirror].receive(hello.message, 0.0):
            assert reply.to == 1
            fresh.receive(reply.message, 0.0)
    assert fresh.before_clock(0.0) is PROCEED
    assert fresh.mirror_clock.staleness == 0


@pytest.mark.parametrize("labels", [torch.tensor([3, 0, 7]), None])
def test_label_counts_cross_the_wire(labels: torch.Tensor | None) -> None:
    policy = build_policy(SPEC, 0, 2, replicas(2)[0], class_counts=labels)
    out = policy.after_clock(local_step(policy, torch.Generator().manual_seed(0)), 0.0)
    [message] = [o.message for o in out if o.message.kind == Kind.CLASS_COUNTS]
    decoded = decode(encode(message))
    assert decoded.kind == Kind.CLASS_COUNTS
    if labels is None:
        assert decoded.values is None
    else:
        assert torch.equal(decoded.float_values(), labels.float())


@pytest.mark.parametrize(
    ("values", "problem"),
    [([-3.0, 5.0], "site 1 sent negative class counts"), ([1.0, 2.0, 3.0], "3 classes, not 2")],
)
def test_bad_counts_are_refused_and_leave_ds_as_set(values: list[float], problem: str) -> None:
    params = replicas(2)
    policy = build_policy(SPEC, 0, 2, params[0], class_counts=torch.tensor([5, 0]))
    policy.after_clock(local_step(policy, torch.Generator().manual_seed(0)), 0.0)
    counts = torch.tensor(values)
    forged = GeoMessage(Kind.CLASS_COUNTS, 1, 1, 0, len(counts), None, counts)
    with pytest.raises(ProtocolError, match=problem):
        policy.receive(forged, 0.0)
    assert policy.before_clock(0.0) is PROCEED
    assert policy.label_skew is None and policy.mirror_clock.staleness == 3
