"""Every error the API returns is one JSON shape (`ErrorBody`) naming the field and the problem."""

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from atoll.platform.service.schemas import ErrorBody, Problem

log = logging.getLogger("atoll.service")


_PLAIN = {
    "extra_forbidden": "unknown field",
    "missing": "is required",
    "json_invalid": "is not valid JSON",
}
_KINDS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_failed",
    500: "internal_error",
    503: "unavailable",
}


class ApiError(Exception):
    status = 400

    def __init__(
        self,
        message: str,
        field: str = "",
        location: str = "request",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.problems = [Problem(field=field, location=location, problem=message)]
        self.headers = headers


class Unauthorized(ApiError):
    status = 401

    def __init__(self, message: str) -> None:
        super().__init__(message, "Authorization", "header", {"WWW-Authenticate": "Bearer"})


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class Invalid(ApiError):
    status = 422


def error_response(
    status: int, message: str, problems: Sequence[Problem], headers: dict[str, str] | None = None
) -> JSONResponse:
    body = ErrorBody(error=_KINDS.get(status, "error"), message=message, problems=list(problems))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def field_path(loc: Sequence[Any]) -> tuple[str, str]:
    """(location, field) from a pydantic error location: ("body", "priors", 3) -> priors[3]."""
    if not loc:
        return "request", ""
    location, rest = str(loc[0]), list(loc[1:])
    if location not in {"body", "query", "path", "header"}:
        location, rest = "body", list(loc)
    if not rest or (location == "body" and rest and isinstance(rest[0], int) and len(rest) == 1):
        return location, location
    field = ""
    for part in rest:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    return location, field


def validation_problems(errors: Sequence[Any]) -> list[Problem]:
    problems = []
    for err in errors:
        location, field = field_path(err.get("loc", ()))
        text = _PLAIN.get(err.get("type", ""), err.get("msg", "is invalid"))
        problems.append(Problem(field=field, location=location, problem=text))
    return problems


async def _on_api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.message, exc.problems, exc.headers)


async def _on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = validation_problems(exc.errors())
    summary = "; ".join(f"{p.field}: {p.problem}" for p in problems[:5])
    return error_response(422, f"invalid request: {summary}", problems)


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status, headers = exc.status_code, exc.headers
    if status == 404:
        where = request.url.path
        problem = Problem(field="path", location="path", problem=f"no such path: {where}")
    elif status == 405:
        what = f"{request.method} is not allowed here"
        problem = Problem(field="method", location="request", problem=what)
        # Starlette names only the methods of the first route that matched the path.
        headers = {"Allow": ", ".join(allowed_methods(request.app, request.url.path))}
    elif status == 400 and exc.detail == _UNREADABLE_BODY:
        status = 422  # as for malformed JSON: the body is not JSON that can be read
        problem = Problem(field="body", location="body", problem="is not valid UTF-8 JSON")
    else:
        problem = Problem(field="", location="request", problem=str(exc.detail))
    return error_response(status, problem.problem, [problem], dict(headers) if headers else None)


_UNREADABLE_BODY = "There was an error parsing the body"  # FastAPI's words for it


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method the API serves at `path`, from the routes in its OpenAPI schema."""
    if not hasattr(app.state, "path_methods"):
        app.state.path_methods = [
            (compile_path(template)[0], sorted(m.upper() for m in operations))
            for template, operations in app.openapi()["paths"].items()
        ]
    for pattern, methods in app.state.path_methods:
        if pattern.match(path):
            return methods
    return []


async def _on_database_error(_request: Request, exc: Exception) -> JSONResponse:
    # Connection trouble is worth a retry; anything else the database refused is our bug.
    if isinstance(exc, OperationalError) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated
    ):
        log.warning("database unavailable: %s", exc)
        problem = Problem(field="", location="request", problem="the database is unavailable")
        return error_response(503, problem.problem, [problem], {"Retry-After": "1"})
    return await _on_unexpected(_request, exc)


async def _on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    problem = Problem(field="", location="request", problem="internal error; see the server log")
    return error_response(500, problem.problem, [problem])


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(DBAPIError, _on_database_error)
    app.add_exception_handler(Exception, _on_unexpected)
