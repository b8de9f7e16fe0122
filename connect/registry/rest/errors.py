"""The one table that turns a registry error into Confluent's answer: the HTTP status
and the body `{"error_code": <code>, "message": …}`.

    RegistryError (connect.registry.core)   → ERROR_CODES, below
    BadRequestError                          → 400 / 400 (a body that is not JSON, or
                                               not a JSON object: rest-utils' answer)
    starlette HTTPException                  → its status (404 unknown route, 405 method)
    anything else                            → 500 / 50001 (a bug of ours)

A 500 (a bug, or StoreError: the `_schemas` log failed) names only the exception's
type, never its text, which may hold a server path; the registry log gets the
message and traceback, once.

Confluent sends 409 as the error code of an incompatible schema (newer servers 40901);
the classic 409 is what its Python client's tests expect, so it is what we send.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from connect.registry.core import errors as core

__all__ = ["ERROR_CODES", "BadRequestError", "code_for", "error_response", "handle_error"]

_log = logging.getLogger("connect.registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class BadRequestError(Exception):
    """A request body that is not JSON, or not JSON of the shape the endpoint reads."""


#: Registry error type → (HTTP status, Confluent error code). First match wins, so a
#: subclass is listed before its base.
ERROR_CODES: tuple[tuple[type[Exception], int, int], ...] = (
    (core.SubjectNotFoundError, 404, 40401),
    (core.VersionNotFoundError, 404, 40402),
    (core.SchemaNotFoundError, 404, 40403),
    (core.SubjectSoftDeletedError, 404, 40404),
    (core.SubjectNotSoftDeletedError, 404, 40405),
    (core.VersionSoftDeletedError, 404, 40406),
    (core.VersionNotSoftDeletedError, 404, 40407),
    (core.SubjectConfigNotFoundError, 404, 40408),
    (core.SubjectModeNotFoundError, 404, 40409),
    (core.IncompatibleSchemaError, 409, 409),
    (core.InvalidSchemaError, 422, 42201),
    (core.InvalidVersionError, 422, 42202),
    (core.InvalidCompatibilityLevelError, 422, 42203),
    (core.InvalidModeError, 422, 42204),
    (core.OperationNotPermittedError, 422, 42205),
    (core.ReferenceExistsError, 422, 42206),
    (core.ImportIdMismatchError, 422, 42207),
    (core.InvalidSubjectError, 422, 42208),
    (core.StoreError, 500, 50001),
    (BadRequestError, 400, 400),
)


def code_for(exc: BaseException) -> tuple[int, int]:
    """(HTTP status, error code) for any exception."""
    if isinstance(exc, HTTPException):
        return exc.status_code, exc.status_code
    for kind, status, code in ERROR_CODES:
        if isinstance(exc, kind):
            return status, code
    return 500, 50001


def error_response(
    status: int, code: int, message: str, headers: dict[str, str] | None = None
) -> Response:
    body = orjson.dumps({"error_code": code, "message": message})
    return Response(body, status, headers=headers, media_type=CONTENT_TYPE)


async def handle_error(request: Request, exc: Exception) -> Response:
    """The exception handler for every error an endpoint or the router raises."""
    status, code = code_for(exc)
    if isinstance(exc, HTTPException):
        phrase = HTTPStatus(exc.status_code).phrase
        message = str(exc.detail) if exc.detail and exc.detail != phrase else None
        return error_response(
            status, code, message or f"HTTP {status} {phrase}", headers=exc.headers
        )
    if status >= 500:
        kind = type(exc).__name__
        _log.error(
            "%s in registry call %s %s: %s",
            kind,
            request.method,
            request.url.path,
            exc,
            exc_info=exc,
        )
        what = (
            "Error in the backend data store"
            if isinstance(exc, core.StoreError)
            else ("Internal server error")
        )
        return error_response(status, code, f"{what} ({kind}); see the registry log")
    return error_response(status, code, str(exc) or type(exc).__name__)
