"""Answers in Confluent's shapes and content type (`application/vnd.schemaregistry.v1+json`;
its clients read any JSON). Bodies are serialised once with orjson: lookups are the
registry's hot path."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from connect.registry.core import SchemaRecord
from connect.registry.rest.errors import CONTENT_TYPE

__all__ = ["json_response", "schema_object", "schema_text_response"]


def json_response(data: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(data), status, media_type=CONTENT_TYPE)


def schema_text_response(text: str) -> Response:
    """The schema itself as the body (`…/schema` endpoints), not wrapped."""
    return Response(text.encode(), 200, media_type=CONTENT_TYPE)


def references(record: SchemaRecord) -> list[dict[str, Any]]:
    return [r.to_json() for r in record.references]


def schema_object(record: SchemaRecord) -> dict[str, Any]:
    """Confluent's Schema object; empty lists and false flags are left out."""
    out: dict[str, Any] = {
        "subject": record.subject,
        "version": record.version,
        "id": record.id,
        "schemaType": record.schema_type,
    }
    if record.references:
        out["references"] = references(record)
    out["schema"] = record.schema
    if record.deleted:
        out["deleted"] = True
    return out
