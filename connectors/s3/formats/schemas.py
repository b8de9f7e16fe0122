"""Connect schemas as JSON (kept in Avro and Parquet objects' metadata), and Struct
building without per-field validation for values read back from our own objects.

An object written by S3Sink carries its records' Connect schema under the metadata key
`connect.schema`, so a restore gives back the very schema (names, versions, logical
types, int8 vs int32) that the records had, not one guessed from the file's types.
"""

from __future__ import annotations

from typing import Any

import orjson

from connect.api import Schema, Struct, Type

__all__ = ["METADATA_KEY", "from_plain", "schema_from_json", "schema_to_json", "to_struct"]

METADATA_KEY = "connect.schema"


def _to_obj(schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {"type": schema.type.value, "optional": schema.optional}
    for attr in ("name", "version", "doc"):
        value = getattr(schema, attr)
        if value is not None:
            out[attr] = value
    if schema.parameters:
        out["parameters"] = dict(schema.parameters)
    if schema.type is Type.STRUCT:
        out["fields"] = [{"field": f.name, **_to_obj(f.schema)} for f in schema.fields]
    elif schema.type is Type.ARRAY:
        assert schema.value_schema is not None
        out["items"] = _to_obj(schema.value_schema)
    elif schema.type is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        out["keys"] = _to_obj(schema.key_schema)
        out["values"] = _to_obj(schema.value_schema)
    return out


def schema_to_json(schema: Schema) -> bytes:
    return orjson.dumps(_to_obj(schema))


def _from_obj(obj: dict[str, Any]) -> Schema:
    t = Type(obj["type"])
    common: dict[str, Any] = {
        "optional": bool(obj.get("optional", False)),
        "name": obj.get("name"),
        "version": obj.get("version"),
        "doc": obj.get("doc"),
        "parameters": dict(obj.get("parameters") or {}),
    }
    if t is Type.STRUCT:
        return Schema.struct([(f["field"], _from_obj(f)) for f in obj["fields"]], **common)
    if t is Type.ARRAY:
        return Schema(t, value_schema=_from_obj(obj["items"]), **common)
    if t is Type.MAP:
        return Schema(
            t, key_schema=_from_obj(obj["keys"]), value_schema=_from_obj(obj["values"]), **common
        )
    return Schema(t, **common)


def schema_from_json(data: bytes | str) -> Schema:
    return _from_obj(orjson.loads(data))


def to_struct(schema: Schema, value: dict[str, Any] | None) -> Struct | None:
    """A Struct of `schema` from a dict of plain values (nested dicts become Structs),
    trusted to fit: it came from an object whose schema this is."""
    if value is None:
        return None
    values = []
    for f in schema.fields:
        v = value.get(f.name)
        if v is not None:
            v = _nested(f.schema, v)
        values.append(v)
    return Struct.trusted(schema, values)


def from_plain(schema: Schema, value: Any) -> Any:
    """A value of any `schema` from plain values (dicts for its structs, at any depth),
    trusted to fit, e.g. the arrays of header structs of a `.headers` object."""
    return None if value is None else _nested(schema, value)


def _nested(schema: Schema, value: Any) -> Any:
    t = schema.type
    if t is Type.STRUCT:
        return to_struct(schema, value)
    if t is Type.ARRAY and schema.value_schema is not None and _has_struct(schema.value_schema):
        return [None if v is None else _nested(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        if isinstance(value, list):  # Arrow reads maps back as lists of pairs
            value = dict(value)
        if schema.value_schema is not None and _has_struct(schema.value_schema):
            return {
                k: None if v is None else _nested(schema.value_schema, v) for k, v in value.items()
            }
    return value


def _has_struct(schema: Schema) -> bool:
    if schema.type is Type.STRUCT:
        return True
    if schema.type is Type.ARRAY and schema.value_schema is not None:
        return _has_struct(schema.value_schema)
    return schema.type is Type.MAP and schema.value_schema is not None


def needs_nesting(schema: Schema) -> bool:
    """Whether plain values of this schema need `_nested` (structs or maps inside)."""
    return _has_struct(schema)
