"""`/compatibility/subjects/{s}/versions[/{v}]`: would this schema be accepted?

Against one version (`latest` on a subject without live versions is compatible), or,
without a version, against the history a registration would be checked against. A
schema that does not parse is 42201, except with `verbose=true`, where Confluent
answers 200 with `is_compatible: false` and the parse error as the message."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from connect.registry.core import InvalidSchemaError, SchemaRegistry, VersionId, parse_version
from connect.registry.rest.params import flag, json_object, schema_request, subject
from connect.registry.rest.responses import json_response

__all__ = ["ROUTES"]


async def _check(request: Request, version: VersionId | None) -> Response:
    registry: SchemaRegistry = request.app.state.registry
    verbose = flag(request, "verbose")
    body = await json_object(request)
    try:
        reasons = await run_in_threadpool(
            registry.test_compatibility,
            subject(request),
            schema_request(body),
            version=version,
            normalize=flag(request, "normalize"),
        )
    except InvalidSchemaError as exc:
        if not verbose:
            raise
        reasons = [str(exc)]
    out: dict[str, Any] = {"is_compatible": not reasons}
    if verbose:
        out["messages"] = reasons
    return json_response(out)


async def check_version(request: Request) -> Response:
    return await _check(request, parse_version(request.path_params["version"]))


async def check_all(request: Request) -> Response:
    return await _check(request, None)


ROUTES = (
    ("/compatibility/subjects/{subject}/versions", check_all, ["POST"]),
    ("/compatibility/subjects/{subject}/versions/{version}", check_version, ["POST"]),
)
