"""Errors of the REST layer, and the one table that turns any error into Kafka Connect's
error response: the HTTP status and the body `{"error_code": <status>, "message": …}`,
where `error_code` always equals the status.

    ConnectError (connect.api)
    └── RestError            an error the REST layer raises itself, carrying its status
        └── MalformedBodyError   a body that is not JSON of the expected shape (400)

Every other error maps by type through `ERROR_STATUS` (first match wins, so a subclass
is listed before its base): the herder's categories, the log's refusals of what a
request named (a topic that does not exist, an invalid name), and FastAPI's
validation of query and path parameters, and the log that cannot be reached for now
(`LogUnavailableError`, a Kafka broker away): 503, in one line that says so and to
retry, since the same request may succeed once the log is back. Reads that can answer
from the herder's last known state do (connect.herder.last_known); this is what a
write, or a read that must ask the log itself, answers. Anything else is a bug of ours: a 500 whose
message names only the exception's type, never its text (which may hold a server path
or a secret), with the traceback in the worker's log.

Where Kafka answers a client's mistake with 500 (Jackson's parse and mapping errors,
an offsets request for a topic that does not exist) we answer 400: the client has
something to fix, and a 500 says the server has.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from connect.api import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    IllegalWorkerStateError,
    NotFoundError,
)
from connect.herder.api import BadRequestError, RebalanceInProgressError
from log import (
    InvalidConfigError,
    InvalidTopicError,
    LogUnavailableError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)

__all__ = [
    "ERROR_STATUS",
    "HANDLED",
    "AnswerErrors",
    "MalformedBodyError",
    "RestError",
    "error_response",
    "handle_error",
    "status_for",
    "unavailable_message",
]

_log = logging.getLogger("connect.rest")


class RestError(ConnectError):
    """An error raised by the REST layer itself, with the HTTP status it answers with."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class MalformedBodyError(RestError):
    """A request body that is not JSON, or not JSON of the shape the endpoint reads.

    Kafka answers these with 500 (Jackson's errors fall through its exception mapper);
    a client that sent them has a request to fix, so here they are 400."""

    def __init__(self, message: str) -> None:
        super().__init__(400, message)


#: Error type → HTTP status. The only place where REST statuses are decided.
ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (RebalanceInProgressError, 409),
    (BadRequestError, 400),
    (ConfigError, 400),
    (IllegalWorkerStateError, 400),
    # The log refusing what a request named: the request is wrong, not the server.
    (UnknownTopicOrPartitionError, 400),
    (InvalidTopicError, 400),
    (InvalidConfigError, 400),
    (OffsetOutOfRangeError, 400),
    (RequestValidationError, 400),
    # Not the request's fault nor a bug: the same request may succeed later.
    (LogUnavailableError, 503),
)

#: The exception types `connect.rest.app` registers `handle_error` for.
HANDLED: tuple[type[Exception], ...] = (
    ConnectError,
    HTTPException,
    RequestValidationError,
    Exception,
)


class AnswerErrors:
    """ASGI middleware that answers an error no handler took (a bug of ours) with the
    JSON 500 of `handle_error`.

    Why not only an `Exception` handler: Starlette runs that one in its outermost
    middleware, which answers and then re-raises, so uvicorn logs "Exception in ASGI
    application" with a traceback and drops the keep-alive connection. Installed as
    the innermost user middleware, this catches the error first and ends the request
    cleanly; the outer handler stays for errors of the middlewares around it.

    `handler` answers the error (default: this module's `handle_error`); the schema
    registry passes its own, which answers in Confluent's error shape."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        handler: Callable[[Request, Exception], Awaitable[Response]] | None = None,
    ) -> None:
        self.app = app
        self._handler = handler or handle_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise  # half a response is out: only closing the connection is honest
            response = await self._handler(Request(scope), exc)
            await response(scope, receive, send)


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


_WHERE = {"query": "Query parameter", "path": "Path parameter", "header": "Header"}


def _validation_message(errors: Sequence[Any]) -> str:
    """One line for a request FastAPI refused: each problem naming its parameter and
    what is wrong with it, joined by "; "; never the endpoint's source location, which
    pydantic's own rendering of the error carries."""
    lines = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        where = _WHERE.get(loc[0], "Request body") if loc else "Request"
        name = ".".join(loc[1:]) if len(loc) > 1 else ""
        subject = f"{where} '{name}'" if name else where
        if error.get("type") == "missing":
            lines.append(f"{subject} is required")
        else:
            lines.append(f"{subject}: {error.get('msg', 'invalid value')}")
    return "; ".join(lines) or "Invalid request"


def unavailable_message(exc: LogUnavailableError) -> str:
    """One line for a request the log's absence refused: what happened, the log's own
    reason (the operation and the client's error code, never a trace), what to do."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"The request cannot be completed now: the log cannot be reached ({reason}). "
        "Retry once it is back"
    )


async def handle_error(request: Request, exc: Exception) -> JSONResponse:
    """The exception handler for every error an endpoint or the router raises."""
    status = status_for(exc)
    if isinstance(exc, HTTPException):
        return error_response(status, _http_message(exc), headers=exc.headers)
    if isinstance(exc, RequestValidationError):
        return error_response(status, _validation_message(exc.errors()))
    if isinstance(exc, LogUnavailableError):
        return error_response(status, unavailable_message(exc))
    if status >= 500 and not isinstance(exc, ConnectError):
        # A bug of ours: its text may hold a server path or an echoed secret, so the
        # client learns the type only and the worker log gets the traceback.
        _log.error(
            "%s in REST call %s %s",
            type(exc).__name__,
            request.method,
            request.url.path,
            exc_info=exc,
        )
        return error_response(
            status, f"Internal server error ({type(exc).__name__}); see the worker log"
        )
    return error_response(status, str(exc) or type(exc).__name__)
