import pytest
from pydantic import ValidationError

from atoll.platform.core.errors import AtollError
from atoll.platform.data.schema import SCHEMAS, SiteData
from atoll.platform.transfer.core import Log
from atoll.platform.transfer.job import CartelJob, CartelSiteJob, plan_cartel_sites
from atoll.platform.transfer.notes import noted

SITES = ("alpha", "bravo", "charlie")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"sites": ["alpha"]}, "at least 2 items"),
        ({"sites": ["alpha", "alpha"]}, "repeat a name"),
        ({"streams": {"alpha": 0, "bravo": 1}}, "missing ['charlie']"),
        ({"streams": {"alpha": 0, "bravo": 1, "charlie": 2, "delta": 3}}, "unknown ['delta']"),
        ({"streams": {"alpha": 0, "bravo": 1, "charlie": -1}}, "stream index is >= 0"),
        ({"model": "mlp"}, "'logreg' or 'cnn'"),
        ({"batches": 10}, "greater than or equal to 30"),
        ({"cartel": {"merge": "max"}}, "'replace', 'average' or 'sample-weighted'"),
        ({"policy": "asp"}, "Extra inputs are not permitted"),
        ({"data": "site", "streams": {s: 0 for s in SITES}}, "with data: site, leave them out"),
        ({"data": "site", "order": "random"}, "'stored' or 'shuffled'"),
        ({"checkpoint_every": 0}, "greater than or equal to 1"),
    ],
)
def test_a_bad_cartel_job_is_refused_naming_the_field(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        CartelJob.model_validate({"sites": SITES, **fields})


@pytest.mark.parametrize(
    ("streams", "expected", "count"),
    [
        (None, {"alpha": 0, "bravo": 1, "charlie": 2}, 3),
        ({"alpha": 0, "bravo": 1, "charlie": 4}, {"alpha": 0, "bravo": 1, "charlie": 4}, 5),
        ({"alpha": 0, "bravo": 1, "charlie": 0}, {"alpha": 0, "bravo": 1, "charlie": 0}, 2),
    ],
)
def test_each_site_takes_its_stream(
    streams: dict[str, int] | None, expected: dict[str, int], count: int
) -> None:
    job = CartelJob(sites=SITES, streams=streams)
    assert {s: job.stream_of(s) for s in SITES} == expected
    assert job.stream_count == count


def test_the_plan_gives_every_site_the_links_of_all_and_its_own_seed() -> None:
    job = CartelJob(sites=SITES, streams={"alpha": 0, "bravo": 1, "charlie": 0})
    listen = {"alpha": ("10.0.0.1", 7000), "bravo": ("10.0.0.2", 7001), "charlie": ("h", 9)}
    planned = plan_cartel_sites("j", job, listen)
    assert planned["bravo"].endpoints == {
        "alpha": "wss://10.0.0.1:7000", "bravo": "wss://10.0.0.2:7001", "charlie": "wss://h:9"
    }  # fmt: skip
    # Twins on one stream draw different batches.
    assert planned["alpha"].stream == planned["charlie"].stream == 0
    assert planned["alpha"].seed != planned["charlie"].seed
    assert CartelSiteJob.model_validate_json(planned["alpha"].model_dump_json()) == planned["alpha"]
    with pytest.raises(ValueError, match="no link address for"):
        plan_cartel_sites("j", job, {"alpha": ("h", 1)})


@pytest.mark.parametrize(
    ("line", "happening", "sites", "classes", "detector"),
    [
        (
            Log("drift", "fired", {"detector": "adwin", "classes": [0, 1]}),
            "drift",
            [],
            [0, 1],
            "adwin",
        ),
        (Log("neighbours", "n", {"sites": ["a", "b"]}), "neighbours", ["a", "b"], [], None),
        (Log("refused", "NaN", {"source": "a"}), "refused", ["a"], [], None),
        (Log("fetch-failed", "silent", {"source": "a"}), "fetch-failed", ["a"], [], None),
        (Log("gave-up", "none left"), "gave-up", [], [], None),
        (Log("registry-down", "refused"), "registry-down", [], [], None),
        (Log("registry-up", "back"), "registry-up", [], [], None),
    ],
)
def test_each_core_log_line_becomes_its_typed_event(
    line: Log, happening: str, sites: list[str], classes: list[int], detector: str | None
) -> None:
    event = noted(line, 5.0, 12)
    assert event is not None
    assert (event.happening, event.sites, event.classes, event.detector) == (
        happening, sites, classes, detector
    )  # fmt: skip
    assert (event.step, event.message) == (12, line.message)


def test_a_merge_is_logged_from_its_lineage_not_its_log_line() -> None:
    assert noted(Log("merged", "merged rows of a"), 5.0, 12) is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (None, "bravo: the job streams each site's own data, and this site's site.yaml names none"),
        (
            "fashion-mnist",
            "bravo: its data (/d/b.npz) is 1x28x28 inputs, 10 classes, not the job's",
        ),
        ("digits", None),
    ],
)
def test_an_own_data_site_needs_data_of_the_jobs_schema(
    data: str | None, problem: str | None
) -> None:
    own = (
        None
        if data is None
        else SiteData.model_validate({"format": "npz", "path": "/d/b.npz", "schema": data})
    )
    job = CartelJob(sites=SITES, data="site", dataset="digits")
    site = CartelSiteJob(job_name="j", site="bravo", job=job, endpoints={}, data=own)
    assert job.expected_schema == SCHEMAS["digits"]
    if problem is None:
        assert site.own_data() == own
    else:
        with pytest.raises(AtollError, match=problem.replace("(", r"\(").replace(")", r"\)")):
            site.own_data()
