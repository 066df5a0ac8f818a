import pytest

from atoll.platform.service.errors import field_path, validation_problems


@pytest.mark.parametrize(
    ("loc", "expected"),
    [
        (("body", "class_priors", 3), ("body", "class_priors[3]")),
        (("body", "capabilities", "gpus"), ("body", "capabilities.gpus")),
        (("body", "sites", 0), ("body", "sites[0]")),
        (("body",), ("body", "body")),
        (("body", 17), ("body", "body")),  # where a JSON decode error happened
        (("query", "k"), ("query", "k")),
        (("path", "site_id"), ("path", "site_id")),
        (("header", "authorization"), ("header", "authorization")),
        (("name",), ("body", "name")),
        ((), ("request", "")),
    ],
)
def test_error_locations_become_field_names(loc: tuple, expected: tuple[str, str]) -> None:
    assert field_path(loc) == expected


def test_problems_say_plainly_what_is_wrong() -> None:
    problems = validation_problems(
        [
            {"loc": ("body", "colour"), "type": "extra_forbidden", "msg": "Extra inputs..."},
            {"loc": ("body", "name"), "type": "missing", "msg": "Field required"},
            {"loc": ("query", "k"), "type": "less_than_equal", "msg": "should be <= 100"},
        ]
    )
    assert [(p.location, p.field, p.problem) for p in problems] == [
        ("body", "colour", "unknown field"),
        ("body", "name", "is required"),
        ("query", "k", "should be <= 100"),
    ]
