"""Request bodies: what the API accepts, checked without a server."""

import pytest
from pydantic import ValidationError

from atoll.registry.schemas import ArtifactCreate, ReportCreate, SiteCreate, SiteUpdate

REPORT = {
    "class_priors": [3, 1, 0],
    "accuracy": 0.9,
    "samples": 400,
    "model_signature": "sha256:ab12",
    "model_version": "7",
}


def problems(model: type, data: dict) -> list[tuple[tuple, str]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return [(e["loc"], e["type"]) for e in caught.value.errors()]


def test_a_valid_report_passes_and_drift_defaults_to_false() -> None:
    assert ReportCreate.model_validate(REPORT).drift is False


@pytest.mark.parametrize(
    ("change", "loc", "kind"),
    [
        ({"colour": "blue"}, ("colour",), "extra_forbidden"),
        ({"class_priors": [1, -1]}, ("class_priors", 1), "greater_than_equal"),
        ({"class_priors": [1, float("nan")]}, ("class_priors", 1), "finite_number"),
        ({"class_priors": []}, ("class_priors",), "too_short"),
        ({"accuracy": 1.5}, ("accuracy",), "less_than_equal"),
        ({"samples": -1}, ("samples",), "greater_than_equal"),
        ({"samples": 2**63}, ("samples",), "less_than_equal"),
        ({"model_signature": "bad sig"}, ("model_signature",), "string_pattern_mismatch"),
        ({"model_version": "1\x00"}, ("model_version",), "string_pattern_mismatch"),
    ],
)
def test_report_fields_are_checked(change: dict, loc: tuple, kind: str) -> None:
    assert (loc, kind) in problems(ReportCreate, {**REPORT, **change})


def test_site_names_labels_and_endpoints_are_checked() -> None:
    assert (("name",), "string_pattern_mismatch") in problems(
        SiteCreate, {"name": "a b", "region": "r"}
    )
    label_problem = problems(SiteCreate, {"name": "a", "region": "r", "labels": {"k": "v\x00"}})
    assert label_problem[0][0][0] == "labels"
    endpoint = problems(SiteCreate, {"name": "a", "region": "r", "endpoint": "not a url"})
    assert endpoint == [(("endpoint",), "string_pattern_mismatch")]
    assert problems(SiteCreate, {"name": "a", "region": "r", "capabilities": {"tpus": 1}}) == [
        (("capabilities", "tpus"), "extra_forbidden")
    ]


def test_an_update_knows_which_fields_were_given() -> None:
    update = SiteUpdate.model_validate({"endpoint": None})
    assert update.model_fields_set == {"endpoint"}


def test_artifact_checksums_must_name_their_algorithm() -> None:
    base = {"sites": ["00000000-0000-0000-0000-000000000001"], "size_bytes": 1, "uri": "s3://b/k"}
    assert ArtifactCreate.model_validate({**base, "checksum": "sha256:" + "a" * 64})
    assert problems(ArtifactCreate, {**base, "checksum": "md5:" + "a" * 32}) == [
        (("checksum",), "string_pattern_mismatch")
    ]


def test_the_json_schema_says_priors_may_not_be_all_zero() -> None:
    schema = ReportCreate.model_json_schema()["properties"]["class_priors"]
    assert schema["contains"] == {"type": "number", "exclusiveMinimum": 0}
    assert schema["items"]["minimum"] == 0
