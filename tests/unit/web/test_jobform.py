"""The job form: typed fields to a GeoJob spec, a YAML job file, and the API's problems put
back next to the fields they name."""

from atoll.platform.geo.job import GeoJob
from atoll.platform.service.schemas import Problem
from atoll.web.views import jobform


def test_the_default_form_is_the_default_job() -> None:
    values = jobform.defaults()
    submitted = jobform.from_form(values)
    assert submitted.errors == {}
    assert GeoJob.model_validate(submitted.spec) == GeoJob()
    assert submitted.name is None


def test_fields_become_typed_nested_values_and_empty_optional_ones_are_left_out() -> None:
    form = {
        **jobform.defaults(), "name": " run-1 ", "geo.threshold": "0.02", "clocks": "60",
        "sites": "", "target_accuracy": "0.9", "optimizer.lr": "",
    }  # fmt: skip
    spec = jobform.from_form(form)
    assert spec.errors == {}
    assert spec.name == "run-1"
    assert spec.spec["geo"]["threshold"] == 0.02
    assert spec.spec["clocks"] == 60
    assert spec.spec["target_accuracy"] == 0.9
    assert "sites" not in spec.spec and "lr" not in spec.spec["optimizer"]


def test_bad_text_is_named_by_field_and_kept_to_show_again() -> None:
    form = {**jobform.defaults(), "clocks": "many", "geo.threshold": "1e", "batch_size": ""}
    result = jobform.from_form(form)
    assert result.errors == {
        "clocks": "must be a whole number",
        "geo.threshold": "must be a number",
        "batch_size": "is required",
    }
    assert result.values["clocks"] == "many"


def test_api_problems_go_next_to_their_field_or_on_top() -> None:
    problems = [
        Problem(field="spec.geo.threshold", location="body", problem="must be >= 0"),
        Problem(field="spec", location="body", problem="no topology 'moon'"),
        Problem(field="spec.geo.lease_s", location="body", problem="must be > 0"),
    ]
    placed = jobform.place_problems(problems)
    assert placed["geo.threshold"] == "must be >= 0"
    assert placed[jobform.GENERAL] == "spec: no topology 'moon'; spec.geo.lease_s: must be > 0"


def test_a_job_file_is_the_whole_spec_or_a_clear_error() -> None:
    good = jobform.from_yaml("dataset: digits\ngeo:\n  policy: bsp\n", "j")
    assert good.errors == {} and good.spec == {"dataset": "digits", "geo": {"policy": "bsp"}}
    assert "not valid YAML" in jobform.from_yaml("a: [", None).errors["job_file"]
    assert "mapping" in jobform.from_yaml("- 1\n- 2\n", None).errors["job_file"]
    huge = "a: " + "x" * (jobform.MAX_YAML_BYTES + 1)
    assert "larger than" in jobform.from_yaml(huge, None).errors["job_file"]
