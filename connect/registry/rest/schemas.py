"""`/schemas…`: schemas by global id, the ids' subjects and versions, schema types."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from connect.registry.core import (
    SCHEMA_TYPES,
    SchemaNotFoundError,
    SchemaRecord,
    SchemaRegistry,
)
from connect.registry.rest.params import flag, page
from connect.registry.rest.responses import (
    json_response,
    references,
    schema_object,
    schema_text_response,
)

__all__ = ["ROUTES", "schema_by_id"]


def _registry(request: Request) -> SchemaRegistry:
    return request.app.state.registry


def _id(request: Request) -> int:
    """The path's id; one that is not a number names no schema (40403)."""
    text = request.path_params["id"]
    try:
        return int(text)
    except ValueError:
        raise SchemaNotFoundError(None) from None


def schema_by_id(record: SchemaRecord) -> dict[str, Any]:
    """The body of GET /schemas/ids/{id} (without the optional subject/version)."""
    out: dict[str, Any] = {"schemaType": record.schema_type, "schema": record.schema}
    if record.references:
        out["references"] = references(record)
    return out


async def get_schema(request: Request) -> Response:
    """The schema of an id. `subject` only adds subject/version when that subject holds
    the id; it never turns a hit into a miss (the deserializer always sends it)."""
    schema_id = _id(request)
    registry = _registry(request)
    record = registry.schema(schema_id)
    out = schema_by_id(record)
    wanted = request.query_params.get("subject")
    if wanted:
        held = [v for s, v in registry.schema_versions(schema_id, deleted=True) if s == wanted]
        if held:
            out["subject"], out["version"] = wanted, held[-1]
    return json_response(out)


async def get_schema_text(request: Request) -> Response:
    return schema_text_response(_registry(request).schema(_id(request)).schema)


async def get_schema_subjects(request: Request) -> Response:
    found = _registry(request).schema_subjects(_id(request), deleted=flag(request, "deleted"))
    return json_response(page(request, found))


async def get_schema_versions(request: Request) -> Response:
    found = _registry(request).schema_versions(_id(request), deleted=flag(request, "deleted"))
    return json_response(page(request, [{"subject": s, "version": v} for s, v in found]))


async def list_schemas(request: Request) -> Response:
    """Every version's Schema object (`subjectPrefix`, `deleted`, `latestOnly`)."""
    registry = _registry(request)
    deleted = flag(request, "deleted")
    latest_only = flag(request, "latestOnly")
    prefix = request.query_params.get("subjectPrefix") or ""
    out = []
    for name in registry.subjects(prefix=prefix, deleted=deleted):
        versions = registry.versions(name, deleted=deleted)
        if latest_only:
            versions = versions[-1:]
        out.extend(schema_object(registry.version(name, v, deleted=True)) for v in versions)
    return json_response(page(request, out))


async def schema_types(request: Request) -> Response:
    return json_response(list(SCHEMA_TYPES))


ROUTES = (
    ("/schemas", list_schemas, ["GET"]),
    ("/schemas/types", schema_types, ["GET"]),
    ("/schemas/ids/{id}", get_schema, ["GET"]),
    ("/schemas/ids/{id}/schema", get_schema_text, ["GET"]),
    ("/schemas/ids/{id}/subjects", get_schema_subjects, ["GET"]),
    ("/schemas/ids/{id}/versions", get_schema_versions, ["GET"]),
)
