"""One module per resource. Here: what they share, the documentation of their error
answers and the check of class priors."""

from typing import Annotated, Any
from uuid import UUID

from fastapi import Path

from atoll.platform.service.errors import Invalid
from atoll.platform.service.schemas import error_docs
from atoll.registry.priors import PriorsError, normalise_priors

# Spelled into each router's own prefix rather than added when routers are included,
# so that a route's path (which metrics use as a label) is the full template.
V1 = "/v1"
SiteId = Annotated[UUID, Path(description="The site's id.")]
ModelId = Annotated[UUID, Path(description="The model artifact's id.")]


ERROR_MEANINGS = {
    401: "missing, unknown or revoked token",
    403: "the token may not do this (a site touching another's records, or not admin)",
    404: "no such record",
    409: "conflicts with the current state (a taken name, a deregistered site, a used id)",
    413: "request body over the size limit",
    422: "invalid request: `problems` names each field and what is wrong",
    503: "database unavailable; retry",
}


def errors(*statuses: int) -> dict[int | str, Any]:
    """OpenAPI entries for the error answers a route can give (every route needs a token)."""
    return error_docs(ERROR_MEANINGS, 401, 422, 503, *statuses)


def created_or_replayed(model: type, what: str, *statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries of a create that a client may retry with its own id: 201 when new,
    200 with the stored record when the id was already stored, and the errors."""
    replay = {"model": model, "description": f"a retry: this {what} id was already stored"}
    return {200: replay, **errors(*statuses)}


def checked_priors(
    values: list[float], max_classes: int, field: str = "class_priors"
) -> list[float]:
    try:
        return normalise_priors(values, max_classes)
    except PriorsError as e:
        where = field if e.index is None else f"{field}[{e.index}]"
        raise Invalid(e.problem, where, "body") from e
