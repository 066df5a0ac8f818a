"""The simulator on the digits dataset: small, fast, and exact where it can be."""

import json
from pathlib import Path

import pytest

from atoll.platform.core.errors import AtollError
from atoll.platform.core.events import SimDiverged, SimEvent
from atoll.platform.data.datasets import load_dataset
from atoll.platform.geo.job import GeoJob
from atoll.platform.geo.spec import Exchange, GeoSpec
from atoll.platform.model.optim import OptimizerSpec
from atoll.platform.sim.compute import ComputeProfile, compute_profile
from atoll.platform.sim.simulator import GeoSimulation

pytestmark = pytest.mark.integration


def job(policy: GeoSpec, topology: str = "three-continents", clocks: int = 30) -> GeoJob:
    return GeoJob(
        dataset="digits",
        topology=topology,
        sites=3,
        partition="dirichlet:0.5",
        batch_size=16,
        geo=policy,
        clocks=clocks,
        eval_every=10,
        eval_samples=200,
        target_accuracy=0.5,
    )


def simulate(policy: GeoSpec, **kwargs: object) -> dict:
    return GeoSimulation(job(policy, **kwargs), compute="0.02").run()


@pytest.mark.parametrize("exchange", ["release", "sharded", "direct"])
def test_asp_that_sends_everything_and_waits_for_every_clock_is_exactly_bsp(
    exchange: Exchange,
) -> None:
    bsp = simulate(GeoSpec(policy="lan"), topology="lan")
    asp = simulate(
        GeoSpec(
            exchange=exchange,
            threshold=0.0,
            staleness=0,
            value_type="float32",
            density=1,
            lookahead=0,
        ),
        topology="lan",
    )
    assert [p["mean_accuracy"] for p in asp["timeline"]] == [
        p["mean_accuracy"] for p in bsp["timeline"]
    ]
    assert asp["final_accuracy"] == bsp["final_accuracy"]


def test_a_simulation_repeats_exactly() -> None:
    a = simulate(GeoSpec(policy="asp"))
    b = simulate(GeoSpec(policy="asp"))
    for key in ("final_accuracy", "wan_bytes", "virtual_time_s", "stall_s", "timeline"):
        assert a[key] == b[key]


@pytest.mark.parametrize(
    "spec",
    [
        GeoSpec(policy="asp"),
        GeoSpec(policy="asp", exchange="sharded"),
        GeoSpec(policy="asp", exchange="tracking"),
        GeoSpec(policy="bsp"),
        GeoSpec(policy="fedavg", period=4),
        GeoSpec(policy="diloco", period=4),
    ],
    ids=["asp", "asp-sharded", "asp-tracking", "bsp", "fedavg", "diloco"],
)
def test_every_replica_ends_equal(spec: GeoSpec) -> None:
    result = simulate(spec)
    finals = {site["final_accuracy"] for site in result["sites"]}
    assert len(finals) == 1
    assert result["wan_bytes"] > 0 and result["clocks"] == 30


def test_a_lookahead_changes_the_gradients_and_still_ends_with_equal_replicas() -> None:
    plain = simulate(GeoSpec(policy="asp", staleness=3, lookahead=0))
    ahead = simulate(GeoSpec(policy="asp", staleness=3, lookahead=0.5))
    assert ahead["timeline"] != plain["timeline"]
    assert len({site["final_accuracy"] for site in ahead["sites"]}) == 1
    assert all(site["lookaheads"] > 0 for site in ahead["sites"])
    assert all(site["lookaheads"] == 0 for site in plain["sites"])


def test_isolated_sites_send_nothing_and_differ() -> None:
    result = simulate(GeoSpec(policy="none"))
    assert result["wan_bytes"] == 0 and result["stall_s"] == 0
    assert len({site["final_accuracy"] for site in result["sites"]}) > 1


def test_bsp_over_the_wan_takes_longer_than_on_a_lan_and_sends_as_much() -> None:
    wan, lan = simulate(GeoSpec(policy="bsp")), simulate(GeoSpec(policy="lan"))
    assert wan["virtual_time_s"] > 3 * lan["virtual_time_s"]
    assert wan["wan_bytes"] == lan["wan_bytes"]
    assert wan["final_accuracy"] == lan["final_accuracy"]  # the same math, only slower


def test_asp_sends_fewer_bytes_than_bsp() -> None:
    asp, bsp = simulate(GeoSpec(policy="asp", threshold=0.1)), simulate(GeoSpec(policy="bsp"))
    # The cap (at most 5% of the elements a clock) and one closing round, over 30 clocks
    assert asp["wan_bytes"] < bsp["wan_bytes"] / 10
    assert asp["wan_bytes"] < bsp["wan_bytes"]
    assert len(asp["links"]) == 6 and sum(asp["links"].values()) == asp["wan_bytes"]


def test_time_to_target_is_when_the_last_site_got_there() -> None:
    result = simulate(GeoSpec(policy="lan"), topology="lan")
    reached = result["time_to_target_s"]
    point = next(p for p in result["timeline"] if p["mean_accuracy"] >= 0.5)
    assert reached == point["time_s"] and result["clocks_to_target"] == point["clock"]


@pytest.mark.parametrize("spec", ["fast", "measured/0", "-1", "nowhere.json"])
def test_bad_compute_profiles_are_named(spec: str) -> None:
    with pytest.raises(AtollError, match="compute profile"):
        compute_profile(spec, "cnn", load_dataset("digits").train, 16)


def test_compute_profiles(tmp_path: Path) -> None:
    data = load_dataset("digits")
    train = data.train
    assert compute_profile("0.05", "cnn", train, 16).step_s == 0.05
    measured = compute_profile("measured", "cnn", train, 16).step_s
    assert 0 < measured < 1
    assert compute_profile("measured/10", "cnn", train, 16).step_s < measured
    # A measured profile times the job's evaluation too; a number alone has no pause.
    assert compute_profile("measured", "cnn", train, 16).eval_s == 0.0
    paused = compute_profile("measured", "cnn", train, 16, data.test).eval_s
    assert 0 < paused < 1
    assert compute_profile("measured/10", "cnn", train, 16, data.test).eval_s < paused
    assert compute_profile("0.05", "cnn", train, 16, data.test).eval_s == 0.0
    written = tmp_path / "profile.json"
    written.write_text(json.dumps({"step_s": 0.05, "eval_s": 0.04, "eval_sites": {"a": 0.06}}))
    from_file = compute_profile(str(written), "cnn", train, 16)
    assert (from_file.eval_for("a"), from_file.eval_for("b")) == (0.06, 0.04)


def test_a_site_trains_on_only_once_its_evaluation_is_done() -> None:
    """As a real site does: each evaluation pauses the site's clocks, and its point is
    stamped when it ends. BSP waits for every site, so the pauses add up and the model
    does not change."""
    spec = job(GeoSpec(policy="lan"), topology="lan")
    plain = GeoSimulation(spec, compute=ComputeProfile(0.02)).run()
    paused = GeoSimulation(spec, compute=ComputeProfile(0.02, eval_s=0.05)).run()
    assert [p["mean_accuracy"] for p in paused["timeline"]] == [
        p["mean_accuracy"] for p in plain["timeline"]
    ]
    pairs = zip(plain["timeline"], paused["timeline"], strict=True)
    shifts = [b["time_s"] - a["time_s"] for a, b in pairs]
    # clocks 10 and 20 evaluate inside the run (one and two pauses by then); clock 30 ends it
    assert shifts == pytest.approx([0.05, 0.10, 0.10])


def test_a_diverging_run_stops_and_says_why() -> None:
    events: list[SimEvent] = []
    blown = job(GeoSpec(policy="asp"), clocks=60).model_copy(
        update={"optimizer": OptimizerSpec(lr=50.0)}
    )
    result = GeoSimulation(blown, compute="0.02", on_event=events.append).run()
    diverged = result["diverged"]
    assert diverged is not None and diverged["clock"] < 30
    assert "loss" in diverged["reason"]
    assert result["clocks"] <= diverged["clock"] + 2  # every site stopped a clock later
    assert [e.site for e in events if isinstance(e, SimDiverged)] == [diverged["site"]]
