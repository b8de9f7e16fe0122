"""Small builders for schema JSON, so test tables read as schemas rather than strings."""

from __future__ import annotations

import json
from typing import Any

from connect.registry.avro import AvroSchema

NO_DEFAULT: Any = object()


def fld(name: str, type_: Any, default: Any = NO_DEFAULT, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type_}
    if default is not NO_DEFAULT:
        out["default"] = default
    out.update(extra)
    return out


def rec(name: str, *fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def enum(name: str, *symbols: str, **extra: Any) -> dict[str, Any]:
    return {"type": "enum", "name": name, "symbols": list(symbols), **extra}


def fixed(name: str, size: int, **extra: Any) -> dict[str, Any]:
    return {"type": "fixed", "name": name, "size": size, **extra}


def arr(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def mapof(values: Any) -> dict[str, Any]:
    return {"type": "map", "values": values}


def schema(value: Any, **kwargs: Any) -> AvroSchema:
    """Parse a schema given as JSON data (a bare string is a type name, not schema text)."""
    return AvroSchema.parse(json.dumps(value), **kwargs)
