"""`/subjects…`: list subjects and versions, register, look up, read and delete."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from connect.registry.core import SchemaRegistry, parse_version
from connect.registry.rest.params import (
    flag,
    json_object,
    optional_flag,
    page,
    schema_request,
    subject,
)
from connect.registry.rest.responses import json_response, schema_object, schema_text_response

__all__ = ["ROUTES"]


def _registry(request: Request) -> SchemaRegistry:
    return request.app.state.registry


async def list_subjects(request: Request) -> Response:
    prefix = request.query_params.get("subjectPrefix") or request.query_params.get("subject") or ""
    found = _registry(request).subjects(
        prefix=prefix,
        deleted=flag(request, "deleted"),
        deleted_only=flag(request, "deletedOnly", "deleted_only"),
    )
    return json_response(page(request, found))


async def list_versions(request: Request) -> Response:
    found = _registry(request).versions(
        subject(request),
        deleted=flag(request, "deleted"),
        deleted_only=flag(request, "deletedOnly", "deleted_only"),
    )
    return json_response(page(request, found))


async def register(request: Request) -> Response:
    body = schema_request(await json_object(request))
    record = await run_in_threadpool(
        _registry(request).register,
        subject(request),
        body,
        normalize=optional_flag(request, "normalize"),
        force=flag(request, "force"),
    )
    # The id is what clients need; the classic answer has nothing else. The schema
    # text is left out so that a client caches the schema it sent, not our canonical
    # form of it (which would miss its cache on the next call).
    return json_response({"id": record.id, "version": record.version})


async def lookup(request: Request) -> Response:
    body = schema_request(await json_object(request))
    record = _registry(request).lookup(
        subject(request),
        body,
        normalize=flag(request, "normalize"),
        deleted=flag(request, "deleted"),
    )
    return json_response(schema_object(record))


async def get_version(request: Request) -> Response:
    version = parse_version(request.path_params["version"])
    record = _registry(request).version(subject(request), version, deleted=flag(request, "deleted"))
    return json_response(schema_object(record))


async def get_version_schema(request: Request) -> Response:
    version = parse_version(request.path_params["version"])
    record = _registry(request).version(subject(request), version, deleted=flag(request, "deleted"))
    return schema_text_response(record.schema)


async def referenced_by(request: Request) -> Response:
    version = parse_version(request.path_params["version"])
    ids = _registry(request).referenced_by(
        subject(request), version, deleted=flag(request, "deleted")
    )
    return json_response(page(request, ids))


async def delete_subject(request: Request) -> Response:
    versions = await run_in_threadpool(
        _registry(request).delete_subject, subject(request), permanent=flag(request, "permanent")
    )
    return json_response(versions)


async def delete_version(request: Request) -> Response:
    version = parse_version(request.path_params["version"])
    deleted = await run_in_threadpool(
        _registry(request).delete_version,
        subject(request),
        version,
        permanent=flag(request, "permanent"),
    )
    return json_response(deleted)


ROUTES = (
    ("/subjects", list_subjects, ["GET"]),
    ("/subjects/{subject}", lookup, ["POST"]),
    ("/subjects/{subject}", delete_subject, ["DELETE"]),
    ("/subjects/{subject}/versions", list_versions, ["GET"]),
    ("/subjects/{subject}/versions", register, ["POST"]),
    ("/subjects/{subject}/versions/{version}", get_version, ["GET"]),
    ("/subjects/{subject}/versions/{version}", delete_version, ["DELETE"]),
    ("/subjects/{subject}/versions/{version}/schema", get_version_schema, ["GET"]),
    ("/subjects/{subject}/versions/{version}/referencedby", referenced_by, ["GET"]),
)
