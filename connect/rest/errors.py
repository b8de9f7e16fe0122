"""Errors of the REST layer, and the one table that turns any error into Kafka Connect's
error response: the HTTP status and the body `{"error_code": <status>, "message": …}`,
where `error_code` always equals the status.

    ConnectError (connect.api)
    └── RestError            an error the REST layer raises itself, carrying its status
        └── MalformedBodyError   a body that is not JSON of the expected shape

Every other ConnectError maps by type through `ERROR_STATUS` (first match wins, so a
subclass is listed before its base); anything else is a 500, as in Kafka.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from connect.api import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    IllegalWorkerStateError,
    NotFoundError,
)
from connect.herder.api import BadRequestError, RebalanceInProgressError

__all__ = [
    "ERROR_STATUS",
    "MalformedBodyError",
    "RestError",
    "error_response",
    "status_for",
]

_log = logging.getLogger("connect.rest")


class RestError(ConnectError):
    """An error raised by the REST layer itself, with the HTTP status it answers with."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class MalformedBodyError(RestError):
    """A request body that is not JSON, or not JSON of the shape the endpoint reads.

    Kafka answers these with 500: Jackson's parse and mapping errors are neither
    Connect errors nor JAX-RS ones, so its exception mapper falls through to 500.
    Clients written against Kafka see the same status here."""

    def __init__(self, message: str) -> None:
        super().__init__(500, message)


#: Domain error → HTTP status. The only place where REST statuses are decided.
ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (RebalanceInProgressError, 409),
    (BadRequestError, 400),
    (ConfigError, 400),
    (IllegalWorkerStateError, 400),
)


def status_for(exc: BaseException) -> int:
    if isinstance(exc, RestError):
        return exc.status
    if isinstance(exc, HTTPException):
        return exc.status_code
    for kind, status in ERROR_STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status, headers=headers)


def _http_message(exc: HTTPException) -> str:
    phrase = HTTPStatus(exc.status_code).phrase
    if exc.detail and exc.detail != phrase:
        return str(exc.detail)
    return f"HTTP {exc.status_code} {phrase}"  # what Jersey says for unmatched routes


async def handle_error(request: Request, exc: Exception) -> JSONResponse:
    """The exception handler for every error an endpoint or the router raises."""
    status = status_for(exc)
    if isinstance(exc, HTTPException):
        return error_response(status, _http_message(exc), headers=exc.headers)
    if status >= 500 and not isinstance(exc, RestError):
        # The type and path only: messages may echo request bodies (configs). Errors
        # that are not ConnectErrors are bugs: the server logs their traceback too.
        _log.error("%s in REST call to %s", type(exc).__name__, request.url.path)
    return error_response(status, str(exc) or type(exc).__name__)
