"""Schemathesis against the live service's OpenAPI schema: generated requests, valid and
invalid, find no 5xx and no answer that breaks the schema. Bounded: a few dozen examples
per operation. Half the generated ids are swapped for records that exist, so that
requests also reach past the 404s.

The schema is built at collection time from an app with the service's settings (pytest
collects before any service runs), and the first test checks that the live service
serves exactly this schema."""

import re
import uuid

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from integration.registry.service import ADMIN, LIMITS, PRIORS, Registry
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES
from schemathesis.specs.openapi.checks import positive_data_acceptance

from atoll.registry.core.config import RegistrySettings
from atoll.registry.main import create_app

pytestmark = pytest.mark.integration
EXAMPLES_PER_OPERATION = 15


@pytest.fixture
def api(registry: Registry) -> dict[str, str]:
    """The schema, and ids of a site, its token and a model that exist."""
    site, _ = registry.site("fuzz-target", priors=PRIORS)
    model = registry.admin.record_model([site.id], "sha256:" + "0" * 64, 1, "s3://b/k")
    return {
        "site_id": str(site.id),
        "token_id": site.token_id,
        "model_id": str(model.id),
        "url": registry.url,
    }


OPENAPI = create_app(
    RegistrySettings.model_validate(
        {k.removeprefix("ATOLL_").lower(): v for k, v in LIMITS.items()}
    )
).openapi()
# A body over the size limit is refused with 413 before anything reads it, fuzzed or not.
NEGATIVE_STATUSES = [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
schema = schemathesis.openapi.from_dict(
    OPENAPI,
    config=SchemathesisConfig.from_dict(
        {"checks": {"negative_data_rejection": {"expected-statuses": NEGATIVE_STATUSES}}}
    ),
)


def test_the_live_service_serves_the_schema_under_test(registry: Registry) -> None:
    assert registry.raw("GET", "/openapi.json", None).json() == OPENAPI


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_generated_requests_get_no_5xx_and_answers_that_match_the_schema(
    case: schemathesis.Case, api: dict[str, str]
) -> None:
    point_at_existing_records(case, api)
    # A cursor is valid only if the service issued it, which no schema can say: refusing
    # one made up is right, so schema-valid-but-refused is not checked for those.
    made_up_cursor = "cursor" in (case.query or {})
    case.call_and_validate(
        base_url=api["url"],
        headers={"Authorization": f"Bearer {ADMIN}"},
        excluded_checks=[positive_data_acceptance] if made_up_cursor else None,
    )


def point_at_existing_records(case: schemathesis.Case, api: dict[str, str]) -> None:
    """Swap half the well-formed generated ids in the path, and the ids a new model refers
    to, for records that exist: otherwise nearly every request would stop at a 404 or a
    422. Malformed ids stay, or an invalid request would turn valid behind the check's back."""
    for name in ("site_id", "model_id", "token_id"):
        value = (case.path_parameters or {}).get(name)
        if _well_formed(name, value) and ord(value[-1]) % 2 == 0:  # type: ignore[index]
            case.path_parameters[name] = api[name]  # type: ignore[index]
    body = case.body
    if case.path == "/v1/models" and isinstance(body, dict):
        sites = body.get("sites")
        if isinstance(sites, list) and 1 <= len(sites) <= 1000 and all(map(_is_uuid, sites)):
            body["sites"] = [api["site_id"]]
        if _is_uuid(body.get("parent")):
            body["parent"] = api["model_id"]


def _well_formed(name: str, value: object) -> bool:
    if name == "token_id":
        return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{1,32}", value) is not None
    return _is_uuid(value)


def _is_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False
