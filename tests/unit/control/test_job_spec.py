import pytest
from pydantic import ValidationError

from atoll.platform.control.schemas import JobCreate, parse_spec
from atoll.platform.geo.job import GeoJob
from atoll.platform.transfer.job import CartelJob

CARTEL = {"kind": "cartel", "sites": ["a", "b"]}


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ({}, GeoJob),  # every spec before cartel jobs: a geo job
        ({"kind": "geo", "clocks": 5}, GeoJob),
        (CARTEL, CartelJob),
    ],
)
def test_a_spec_is_the_kind_it_names_geo_by_default(spec: dict[str, object], kind: type) -> None:
    parsed = parse_spec(spec)
    assert type(parsed) is kind
    assert type(JobCreate.model_validate({"spec": spec}).spec) is kind
    # Stored as dumped, read back the same.
    assert parse_spec(parsed.model_dump(mode="json")) == parsed


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"kind": "gossip"}, "a job's kind is geo (the default) or cartel"),
        ({"kind": "cartel", "sites": ["a"]}, "at least 2 items"),
        ({"kind": "cartel", "sites": ["a", "b"], "topology": "lan"}, "Extra inputs"),
        ({"kind": "geo", "sites": ["a", "b"]}, "valid integer"),  # a geo job's `sites` is a count
    ],
)
def test_a_bad_spec_is_refused_naming_the_problem(spec: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        JobCreate.model_validate({"spec": spec})


def test_a_problem_names_the_specs_own_field_whatever_its_kind() -> None:
    with pytest.raises(ValidationError) as geo:
        JobCreate.model_validate({"spec": {"geo": {"threshold": "x"}}})
    with pytest.raises(ValidationError) as cartel:
        JobCreate.model_validate({"spec": {**CARTEL, "cartel": {"k": 0}}})
    assert geo.value.errors()[0]["loc"] == ("spec", "geo", "threshold")
    assert cartel.value.errors()[0]["loc"] == ("spec", "cartel", "k")
