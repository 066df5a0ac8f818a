"""The response bodies both services share: errors, liveness and readiness."""

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

M = TypeVar("M", bound=BaseModel)


class Problem(BaseModel):
    field: str = Field(description='e.g. "class_priors[3]", "k", "Authorization"')
    location: Literal["body", "query", "path", "header", "request"] = Field(
        description="Where the field is."
    )
    problem: str = Field(description="What is wrong with it.")


class ErrorBody(BaseModel):
    error: str = Field(description="machine-readable kind, e.g. validation_failed, forbidden")
    message: str = Field(description="one line for people")
    problems: list[Problem] = Field(description="Each field at fault, and its problem.")


class Health(BaseModel):
    status: Literal["ok"] = Field(description="The process answers.")


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"] = Field(description="Whether to send it traffic.")
    database: str = Field(description="backend, or the reason it is unreachable")
    schema_revision: list[str] = Field(description="The database's Alembic revision.")
    schema_head: list[str] = Field(description="The revision this code needs.")
    problem: str | None = Field(description="Why it is not ready, and what to do.")


def from_row(model: type[M], row: object, **computed: Any) -> M:
    """A response body from a table row: each field from the row's attribute of the same
    name, but those given in `computed` (renamed, derived or joined in)."""
    copied = {name: getattr(row, name) for name in model.model_fields if name not in computed}
    return model.model_validate({**copied, **computed})


def error_docs(meaning: dict[int, str], *statuses: int) -> dict[int | str, Any]:
    """OpenAPI entries for the error answers a route can give, all of them `ErrorBody`:
    `statuses`, each described by `meaning`."""
    return {s: {"model": ErrorBody, "description": meaning[s]} for s in statuses}
