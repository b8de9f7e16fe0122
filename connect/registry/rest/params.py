"""Reading requests the way Confluent's JAX-RS stack reads them.

- Any content type is accepted (Confluent's `application/vnd.schemaregistry.v1+json`,
  `application/vnd.schemaregistry+json`, `application/json`, `application/octet-stream`
  or none): the body is parsed as JSON whatever it says.
- Boolean query flags follow `Boolean.valueOf`: "true" in any case is true, anything
  else (including "True"'s cousins like "yes") false.
- Unknown body keys are ignored; a body that is not a JSON object is a 400.
- Subjects may hold a `/`, sent as `%2F`: `KeepEncodedSlash` keeps it from splitting
  the path, and `subject()` turns it back.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from connect.registry.core import (
    InvalidSchemaError,
    Reference,
    SchemaRequest,
    parse_schema_type,
    parse_version,
)
from connect.registry.rest.errors import BadRequestError

__all__ = [
    "KeepEncodedSlash",
    "flag",
    "json_object",
    "page",
    "schema_request",
    "subject",
]

_SLASH = "\ue000"  # a private-use character standing for an encoded slash in a path


class KeepEncodedSlash:
    """ASGI middleware: `a%2Fb` in a path stays one segment (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw: bytes = scope.get("raw_path") or b""
            if b"%2f" in raw.lower():
                from urllib.parse import unquote

                text = raw.decode("latin-1").replace("%2F", _SLASH).replace("%2f", _SLASH)
                scope = dict(scope)
                scope["path"] = unquote(text)
            path = scope.get("path", "")
            if len(path) > 1 and path.endswith("/"):
                scope = dict(scope)
                scope["path"] = path.rstrip("/") or "/"
        await self.app(scope, receive, send)


def subject(request: Request, name: str = "subject") -> str:
    return str(request.path_params[name]).replace(_SLASH, "/")


def flag(request: Request, *names: str) -> bool:
    """A boolean query flag under any of `names` (Confluent's and the client's)."""
    for name in names:
        value = request.query_params.get(name)
        if value is not None:
            return value.strip().lower() == "true"
    return False


def optional_flag(request: Request, name: str) -> bool | None:
    value = request.query_params.get(name)
    return None if value is None else value.strip().lower() == "true"


def page(request: Request, items: list[Any]) -> list[Any]:
    """`offset` and `limit` (-1: no limit) applied to a list; bad numbers are ignored."""
    try:
        offset = max(0, int(request.query_params.get("offset", 0)))
    except ValueError:
        offset = 0
    try:
        limit = int(request.query_params.get("limit", -1))
    except ValueError:
        limit = -1
    items = items[offset:]
    return items if limit < 0 else items[:limit]


async def json_object(request: Request) -> dict[str, Any]:
    """The body as a JSON object; BadRequestError (400) otherwise."""
    raw = await request.body()
    if not raw.strip():
        raise BadRequestError("No content to map due to end-of-input: the request has no body")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequestError(f"Unrecognized token in the request body: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequestError("The request body must be a JSON object")
    return body


def schema_request(body: dict[str, Any]) -> SchemaRequest:
    """A register, lookup or compatibility body; a missing or non-string schema, or
    references of the wrong shape, are invalid schemas (42201)."""
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise InvalidSchemaError("the request has no schema (a JSON string under 'schema')")
    schema_type = parse_schema_type(body.get("schemaType"))
    refs = body.get("references") or []
    if not isinstance(refs, list):
        raise InvalidSchemaError("'references' must be a list of {name, subject, version}")
    references = []
    for ref in refs:
        if not isinstance(ref, dict) or not all(
            isinstance(ref.get(k), str) for k in ("name", "subject")
        ):
            raise InvalidSchemaError(f"reference {ref!r} needs a name, a subject and a version")
        version = parse_version(ref.get("version", -1))
        references.append(
            Reference(ref["name"], ref["subject"], -1 if version == "latest" else version)
        )
    return SchemaRequest(
        schema=text,
        schema_type=schema_type,
        references=tuple(references),
        id=_optional_int(body, "id"),
        version=_optional_int(body, "version"),
    )


def _optional_int(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None or (key == "version" and value in (0, -1)):
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequestError(f"'{key}' must be an integer")
    return value
