import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import GeoSpec
from atoll.platform.model.optim import OptimizerSpec


@pytest.mark.parametrize(("staleness", "momentum"), [(0, 0.9), (1, 0.8), (2, 0.7), (20, 0.0)])
def test_asp_sites_lower_sgd_momentum_by_what_staleness_adds(
    staleness: int, momentum: float
) -> None:
    job = GeoJob(
        optimizer=OptimizerSpec(momentum=0.9),
        geo=GeoSpec(policy="asp", exchange="release", staleness=staleness, lookahead=0),
    )
    assert job.site_optimizer.momentum == pytest.approx(momentum)
    assert job.site_optimizer.lr == job.optimizer.lr


@pytest.mark.parametrize(
    "job",
    [
        GeoJob(geo=GeoSpec(policy="bsp")),
        GeoJob(geo=GeoSpec(exchange="tracking", staleness=3, lookahead=0)),  # nothing late
        GeoJob(geo=GeoSpec(staleness=3, lookahead=0, compensate_momentum=False)),
        GeoJob(geo=GeoSpec(staleness=3, lookahead=0.5)),
        GeoJob(optimizer=OptimizerSpec(name="adam", lr=0.001)),
    ],
)
def test_the_optimizer_is_left_alone_otherwise(job: GeoJob) -> None:
    assert job.site_optimizer == job.optimizer


def test_an_ablation_runs_any_policy_over_lan_links() -> None:
    _, links = GeoJob(topology="gaia-11", sites=4, lan_links=True).topologies()
    assert links.link("virginia", "ireland").bandwidth_bps == 1e9


def test_lan_runs_the_same_sites_on_lan_links() -> None:
    sites, links = GeoJob(topology="gaia-11", sites=4, geo=GeoSpec(policy="lan")).topologies()
    assert sites.sites == ("virginia", "california", "oregon", "ireland")
    assert links.sites == sites.sites
    assert links.link("virginia", "ireland").bandwidth_bps == 1e9
    _, wan = GeoJob(topology="gaia-11", sites=4, geo=GeoSpec(policy="bsp")).topologies()
    assert wan.link("virginia", "ireland").latency_s == pytest.approx(0.034)


def test_too_many_sites_for_the_topology_is_named() -> None:
    with pytest.raises(AtollError, match="has 3 sites, not 5"):
        GeoJob(topology="three-continents", sites=5).topologies()


def test_each_site_shuffles_differently_but_reproducibly() -> None:
    job = GeoJob(seed=3)
    assert job.site_seed(0) != job.site_seed(1)
    assert job.site_seed(1) == GeoJob(seed=3).site_seed(1)


@pytest.mark.parametrize(
    ("spec", "label"),
    [
        (GeoSpec(policy="asp"), "asp direct 0.8% lookahead 0.5 DS=3"),
        (
            GeoSpec(exchange="sharded", density=0.02, lookahead=0, value_type="int8"),
            "asp sharded 2.0% int8 DS=3",
        ),
        (GeoSpec(density_floor=0.002), "asp direct 0.8% from 0.2% lookahead 0.5 DS=3"),
        (GeoSpec(final="flush"), "asp direct 0.8% lookahead 0.5 final flush DS=3"),
        (GeoSpec(sync_at_skew=0.7), "asp direct 0.8% lookahead 0.5 sync at skew 0.7 DS=3"),
        (GeoSpec(sync_at_skew=None), "asp direct 0.8% lookahead 0.5 never synchronous DS=3"),
        (
            GeoSpec(exchange="tracking", density=0.01, lookahead=1),
            "asp tracking 1.0% lookahead 1 DS=3",
        ),
        (GeoSpec(exchange="release", density=1, lookahead=0), "asp v=1%"),
        (
            GeoSpec(exchange="release", density=0.006, staleness=4),
            "asp v=1% cap 0.6% lookahead 0.5 DS=4",
        ),
        (
            GeoSpec(exchange="release", threshold=0.05, value_type="int8", density=1, lookahead=0),
            "asp v=5% int8",
        ),
        (
            GeoSpec(exchange="release", staleness=0, budget_mbps=10, density=1, lookahead=0),
            "asp adaptive DS=0",
        ),
        (GeoSpec(policy="diloco", period=5), "diloco H=5"),
    ],
    ids=[
        "default",
        "sharded",
        "floor",
        "flush",
        "sync-at-skew",
        "never-synchronous",
        "tracking",
        "uncapped",
        "capped",
        "int8",
        "adaptive-ds0",
        "diloco",
    ],
)
def test_a_policy_label_names_what_differs_from_the_defaults(spec: GeoSpec, label: str) -> None:
    assert spec.label == label
