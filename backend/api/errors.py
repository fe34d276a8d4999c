"""The one place errors become HTTP responses `{"error": {"code", "message", "details"}}`.

It also documents them: `ErrorResponse` is the envelope's schema, `errors(...)` declares the
error statuses a route answers, and the OpenAPI document drops FastAPI's default 422 shape.
"""

from __future__ import annotations

import logging
import math
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from backend.errors import ServiceUnavailable, SkillhiveError

log = logging.getLogger("skillhive.api")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
}


class ErrorBody(BaseModel):
    code: str = Field(description="stable, machine-readable; branch on this")
    message: str = Field(description="for people: what went wrong and what to do")
    details: dict[str, Any] = Field(description="the names and limits involved, per `code`")


class ErrorResponse(BaseModel):
    """Every error answer of the API."""

    error: ErrorBody


ERROR_DESCRIPTIONS = {
    401: "no valid API token: `missing_token`, `malformed_token`, `invalid_token`, "
    "`token_expired`, `token_revoked`, `user_inactive`",
    403: "the caller may not do this (`admin_required`)",
    404: "no such object (or not the caller's)",
    409: "the request conflicts with the current state",
    412: "`If-Match` or `metadata.resourceVersion` is not the current version "
    "(`resource_version_mismatch`)",
    413: "the body is larger than the limit in `details`",
    415: "the body's Content-Type is not accepted (`unsupported_media_type`)",
    422: "the request is invalid; `code` says how and `details` names what",
    429: "a quota or limit is reached: `code` names it (`quota_*`, `too_many_turns`, "
    "`import_in_progress`); retry after "
    "`Retry-After` seconds",
    503: "a backing service (database or Redis) is unavailable, or no database connection was "
    "free in time (`dependency_unavailable`), or every import slot stayed busy (`import_busy`); "
    "retry after `Retry-After` seconds",
}


def errors(*statuses: int | tuple[int, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for error statuses; `(status, description)` words one for a route."""
    declared: dict[int | str, dict[str, Any]] = {}
    for entry in statuses:
        status, description = entry if isinstance(entry, tuple) else (entry, None)
        declared[status] = {
            "model": ErrorResponse,
            "description": description or ERROR_DESCRIPTIONS[status],
        }
    return declared


def _drop_default_422(schema: dict[str, Any]) -> dict[str, Any]:
    """FastAPI documents 422 as `{detail: [...]}` on every route with parameters. The API never
    answers that shape: routes declare their real 422 with `errors(422)`, so the default goes.
    Responses are listed by status."""
    default = {"$ref": "#/components/schemas/HTTPValidationError"}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            content = responses.get("422", {}).get("content", {})
            if content.get("application/json", {}).get("schema") == default:
                del responses["422"]
            operation["responses"] = dict(sorted(responses.items()))
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    return schema


def _document_body_caps(schema: dict[str, Any]) -> dict[str, Any]:
    """Every API write may carry a body, and `body_limits.BodyLimitMiddleware` caps every body
    (413) whatever the route: declared once here, where it is true for all of them."""
    for path, operations in schema.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for method, operation in operations.items():
            if method in ("post", "put", "patch"):
                responses = operation.setdefault("responses", {})
                responses.setdefault("413", _error_response_schema(413))
                operation["responses"] = dict(sorted(responses.items()))
    return schema


def _error_response_schema(status: int) -> dict[str, Any]:
    return {
        "description": ERROR_DESCRIPTIONS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }


def _document_errors(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        # idempotent: `generate` caches the document
        return _document_body_caps(_drop_default_422(generate()))

    app.openapi = openapi  # type: ignore[method-assign]


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


# Connection-level failures only (an IntegrityError is a bug to see, not an outage); the pool's
# TimeoutError is a connection that could not be had in `SKILLHIVE_DATABASE_POOL_TIMEOUT`.
DEPENDENCY_ERRORS: tuple[type[Exception], ...] = (
    OperationalError,
    InterfaceError,
    PoolTimeoutError,
    RedisConnectionError,
    RedisTimeoutError,
)


def dependency_unavailable(exc: Exception, retry_after: int) -> ServiceUnavailable:
    # The class name only: driver messages can carry hosts and credentials.
    return ServiceUnavailable(
        "a backing service (database or Redis) is unavailable; retry shortly",
        code="dependency_unavailable",
        details={"error": type(exc).__name__, "retry_after": retry_after},
    )


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    """`details.retry_after` (seconds) of a 429 or 503 is also sent as `Retry-After`."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    retry_after = (details or {}).get("retry_after")
    if status in (429, 503) and isinstance(retry_after, int | float):
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return JSONResponse(
        jsonable_encoder(error_body(code, message, details)),
        status_code=status,
        headers=headers or None,
    )


async def _skillhive_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, SkillhiveError)
    response = error_response(exc.status_code, exc.code, exc.message, exc.details)
    response.headers.update(getattr(exc, "headers", {}))  # e.g. a quota's Retry-After
    return response


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors()
    ]
    if any(e["type"] == "json_invalid" for e in errors):  # as the routes reading their own body
        return error_response(422, "invalid_json", "the body is not valid JSON", {"errors": errors})
    return error_response(422, "invalid_request", "request validation failed", {"errors": errors})


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    message = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    return error_response(exc.status_code, code, message)


async def _dependency_error(request: Request, exc: Exception) -> JSONResponse:
    log.warning(
        "%s %s: dependency unavailable: %s", request.method, request.url.path, type(exc).__name__
    )
    error = dependency_unavailable(exc, request.app.state.settings.retry_after_seconds)
    return error_response(error.status_code, error.code, error.message, error.details)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal_error", "internal server error")


def install_error_handlers(app: FastAPI) -> None:
    _document_errors(app)
    app.add_exception_handler(SkillhiveError, _skillhive_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    for dependency_error in DEPENDENCY_ERRORS:
        app.add_exception_handler(dependency_error, _dependency_error)
    app.add_exception_handler(Exception, _unexpected_error)
