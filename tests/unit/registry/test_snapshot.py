import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atoll.registry.core.snapshot import Facts, PriorsSnapshot, Profile, SignatureRows, SiteRow
from atoll.registry.neighbours import js_divergence, rank_neighbours


def row(site: str, priors: list[float], seen: float = 100.0, signature: str = "s") -> SiteRow:
    """A site's row, its priors normalised as the registry stores them."""
    values = np.asarray(priors, dtype=np.float64)
    return SiteRow(site, signature, values / values.sum(), seen)


def ids(snapshot: PriorsSnapshot, target: list[float], k: int = 10, **kwargs: object) -> list[str]:
    options = {"signature": "s", "exclude": (), "since_s": 0.0, **kwargs}
    ranking = snapshot.rank(target=np.asarray(target), k=k, **options)  # type: ignore[arg-type]
    return [r.site_id for r in ranking.neighbours]


def test_nearest_first_with_each_divergence_and_the_count_of_candidates() -> None:
    snapshot = PriorsSnapshot()
    for site, priors in {"far": [0, 0, 1], "near": [0.7, 0.2, 0.1], "mid": [0.4, 0.4, 0.2]}.items():
        snapshot.put(row(site, priors))
    ranking = snapshot.rank("s", np.array([0.7, 0.2, 0.1]), 2, (), 0.0)
    assert [r.site_id for r in ranking.neighbours] == ["near", "mid"]
    assert ranking.candidates == 3
    assert ranking.neighbours[1].divergence == pytest.approx(
        js_divergence([0.7, 0.2, 0.1], [0.4, 0.4, 0.2])
    )


def test_only_sites_seen_since_the_window_opened_and_not_excluded_count() -> None:
    snapshot = PriorsSnapshot()
    snapshot.put(row("old", [1, 0], seen=10.0))
    snapshot.put(row("new", [1, 0], seen=50.0))
    snapshot.put(row("me", [1, 0], seen=50.0))
    ranking = snapshot.rank("s", np.array([1.0, 0.0]), 5, ["me"], since_s=20.0)
    assert [r.site_id for r in ranking.neighbours] == ["new"]
    assert ranking.candidates == 1
    snapshot.seen("old", 60.0)  # a heartbeat brings it back, with its priors
    assert ids(snapshot, [1, 0], since_s=20.0, exclude=["me"]) == ["new", "old"]


def test_other_signatures_are_not_candidates_and_a_new_signature_moves_the_site() -> None:
    snapshot = PriorsSnapshot()
    snapshot.put(row("a", [1, 0]))
    snapshot.put(row("b", [1, 0], signature="other"))
    assert ids(snapshot, [1, 0]) == ["a"]
    snapshot.put(row("a", [1, 0], signature="other"))
    assert ids(snapshot, [1, 0]) == []
    assert ids(snapshot, [1, 0], signature="other") == ["a", "b"]
    assert len(snapshot) == 2


def test_a_new_report_replaces_the_priors_and_an_older_one_does_not() -> None:
    snapshot = PriorsSnapshot()
    snapshot.put(row("a", [1, 0], seen=10.0))
    snapshot.put(row("b", [0.5, 0.5], seen=10.0))
    snapshot.put_if_newer(row("a", [0, 1], seen=20.0))
    assert ids(snapshot, [0, 1]) == ["a", "b"]
    snapshot.put_if_newer(row("a", [1, 0], seen=15.0))  # committed earlier, replayed later
    assert ids(snapshot, [0, 1]) == ["a", "b"]
    assert snapshot.seen_s("a") == 20.0


def test_a_sites_latest_priors_and_signature_are_there_to_ask_with() -> None:
    snapshot = PriorsSnapshot()
    assert snapshot.latest("a") is None
    snapshot.put(row("a", [1, 3]))
    snapshot.put(row("b", [1, 1, 2]))  # widens the signature: a's priors read zero-padded
    signature, priors = snapshot.latest("a")  # type: ignore[misc]
    assert signature == "s" and priors.tolist() == [0.25, 0.75, 0.0]
    priors[0] = 9.0  # a copy: the snapshot is not changed through it
    assert snapshot.latest("a")[1].tolist() == [0.25, 0.75, 0.0]  # type: ignore[index]


def test_forgotten_sites_leave_and_the_rest_stay_whole() -> None:
    snapshot = PriorsSnapshot()
    for i in range(5):
        snapshot.put(row(f"s{i}", [i + 1, 1]))
    snapshot.forget("s1")  # a hole in the middle, filled by the last row
    snapshot.forget("nobody")
    assert sorted(ids(snapshot, [1, 1])) == ["s0", "s2", "s3", "s4"]
    for site in ("s0", "s2", "s3", "s4"):
        i = int(site[1:])
        d = snapshot.rank("s", np.array([i + 1.0, 1.0]) / (i + 2), 1, (), 0.0).neighbours[0]
        assert d.site_id == site and d.divergence == pytest.approx(0.0, abs=1e-12)
    for site in ("s0", "s2", "s3", "s4"):
        snapshot.forget(site)
    assert len(snapshot) == 0 and ids(snapshot, [1, 1]) == []


def test_wider_priors_widen_the_signature_and_narrower_ones_count_zero_beyond() -> None:
    snapshot = PriorsSnapshot()
    snapshot.put(row("two", [0.5, 0.5]))
    snapshot.put(row("three", [0.0, 0.0, 1.0]))
    ranking = snapshot.rank("s", np.array([0.5, 0.5]), 2, (), 0.0)
    assert [r.site_id for r in ranking.neighbours] == ["two", "three"]
    assert ranking.neighbours[0].divergence == pytest.approx(0.0, abs=1e-12)
    assert ranking.neighbours[1].divergence == pytest.approx(1.0)
    # A target wider than every row still compares.
    wide = snapshot.rank("s", np.array([0.0, 0.0, 0.0, 1.0]), 1, (), 0.0)
    assert wide.neighbours[0].divergence == pytest.approx(1.0)


def test_it_grows_past_its_first_rows() -> None:
    snapshot = PriorsSnapshot()
    for i in range(200):
        snapshot.put(row(f"s{i:03d}", [1, i]))
    assert ids(snapshot, [1, 0], k=3) == ["s000", "s001", "s002"]
    assert len(snapshot) == 200


def test_loading_a_site_twice_is_refused() -> None:
    rows = SignatureRows("s", ["a", "a"], np.eye(2), np.zeros(2))
    with pytest.raises(ValueError, match="a site comes twice"):
        PriorsSnapshot([rows])


LAB = Profile("lab", "eu", "https://lab", "1", 0.9, 100, False)


def loaded(*profiled: str) -> PriorsSnapshot:
    """Sites a, b and c with priors, as a load gives them; those named have a profile."""
    rows = SignatureRows("s", ["a", "b", "c"], np.eye(3), np.array([100.0, 100.0, 100.0]))
    return PriorsSnapshot([rows], {site: LAB._replace(name=site) for site in profiled})


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        # A report of this process's: its facts replace the profile's, the rest stays.
        (
            lambda s: s.put(SiteRow("a", "s", np.eye(3)[0], 200.0, Facts("2", 0.5, 7, True))),
            {
                "a": (
                    LAB._replace(name="a", model_version="2", accuracy=0.5, samples=7, drift=True),
                    200.0,
                ),
                "b": (LAB._replace(name="b"), 100.0),
            },
        ),
        # A sign of life: the profile stays, last seen moves.
        (
            lambda s: s.seen("a", 300.0),
            {"a": (LAB._replace(name="a"), 300.0), "b": (LAB._replace(name="b"), 100.0)},
        ),
        # A rename, a new region or endpoint: no profile until the next load.
        (lambda s: s.changed("a"), {"b": (LAB._replace(name="b"), 100.0)}),
        # Deregistered: gone with its priors.
        (lambda s: s.forget("b"), {"a": (LAB._replace(name="a"), 100.0)}),
        # A new signature moves the site, and its profile goes with it.
        (
            lambda s: s.put(SiteRow("a", "t", np.eye(3)[0], 150.0, Facts("9", 0.1, 1, False))),
            {
                "a": (LAB._replace(name="a", model_version="9", accuracy=0.1, samples=1), 150.0),
                "b": (LAB._replace(name="b"), 100.0),
            },
        ),
        # A heartbeat's row brings no facts: the report's stay.
        (
            lambda s: s.put(SiteRow("a", "s", np.eye(3)[1], 120.0)),
            {"a": (LAB._replace(name="a"), 120.0), "b": (LAB._replace(name="b"), 100.0)},
        ),
    ],
)
def test_profiles_follow_reports_heartbeats_changes_and_deregistrations(
    step: object, expected: dict[str, tuple[Profile, float]]
) -> None:
    snapshot = loaded("a", "b")
    step(snapshot)  # type: ignore[operator]
    # c has priors but no profile (registered since the load): never answered from memory.
    assert snapshot.profiles(["a", "b", "c", "nobody"]) == expected


def test_a_site_without_priors_has_no_profile_to_answer_with() -> None:
    snapshot = PriorsSnapshot([], {"a": LAB})  # loaded, but its priors since forgotten
    assert snapshot.profiles(["a"]) == {}


priors = st.lists(st.integers(0, 5), min_size=3, max_size=3).filter(lambda v: sum(v) > 0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(priors, min_size=1, max_size=30),
    st.lists(st.integers(0, 3), min_size=30, max_size=30),
    priors,
    st.integers(1, 8),
)
def test_loaded_or_built_one_by_one_it_ranks_as_the_database_path_does(
    rows: list[list[int]], ages: list[int], target: list[int], k: int
) -> None:
    """The snapshot against `rank_neighbours` over the same sites (what a query without a
    snapshot ranks): the same sites, in the same order, with the same divergences."""
    site_ids = [f"site-{i:02d}" for i in range(len(rows))]
    matrix = np.asarray(rows, dtype=np.float64)
    matrix /= matrix.sum(axis=1, keepdims=True)
    seen = np.asarray(ages[: len(rows)], dtype=np.float64)
    loaded = PriorsSnapshot([SignatureRows("s", site_ids, matrix, seen)])
    built = PriorsSnapshot()
    for i in reversed(range(len(rows))):
        built.put(SiteRow(site_ids[i], "s", matrix[i], float(seen[i])))
    p = np.asarray(target, dtype=np.float64) / sum(target)
    live = [i for i in range(len(rows)) if seen[i] >= 2]
    expected = rank_neighbours(p.tolist(), [site_ids[i] for i in live], matrix[live], k)
    for snapshot in (loaded, built):
        got = snapshot.rank("s", p, k, (), since_s=2.0)
        assert [r.site_id for r in got.neighbours] == [r.site_id for r in expected]
        assert [r.divergence for r in got.neighbours] == pytest.approx(
            [r.divergence for r in expected], abs=1e-12
        )
        assert got.candidates == len(live)
