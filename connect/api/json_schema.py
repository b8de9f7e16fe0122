"""Connect schemas ⇄ the schema JSON of Kafka's JsonConverter envelope.

A schema is written as an object whose keys come in Kafka's order, so the bytes match
what a Java worker writes for the same schema:

    type, then items (array) | keys, values (map) | fields (struct),
    optional, name, version, doc, parameters, default

Each struct field is its schema's object with `"field": <name>` appended last, e.g.
`{"type":"int32","optional":false,"field":"id"}`. Parameters are written only when the
schema has some (our schemas always carry a mapping; Kafka's carry null when unset,
and its builders never set an empty one). A default is written through the same
encoder as a payload of that schema.

Reading accepts what Kafka accepts: `type` is required; `optional` counts only when it
is the boolean true; `name`, `version`, `doc` are taken when they have the right JSON
type; parameter values must be strings; a default is decoded against the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.data import Schema, Type
from connect.api.errors import DataError, SchemaError
from connect.api.json_decoders import compile_decoder
from connect.api.json_values import NeedsExactDecimal, compile_encoder

__all__ = ["schema_from_json", "schema_to_json"]

_TYPES = {t.value: t for t in Type}


def schema_to_json(schema: Schema, *, numeric_decimals: bool = False) -> dict[str, Any]:
    """The schema JSON object (a dict in Kafka's key order) of `schema`."""
    node: dict[str, Any] = {"type": schema.type.value}
    t = schema.type
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        node["items"] = schema_to_json(schema.value_schema, numeric_decimals=numeric_decimals)
    elif t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        node["keys"] = schema_to_json(schema.key_schema, numeric_decimals=numeric_decimals)
        node["values"] = schema_to_json(schema.value_schema, numeric_decimals=numeric_decimals)
    elif t is Type.STRUCT:
        fields = []
        for f in schema.fields:
            field_node = schema_to_json(f.schema, numeric_decimals=numeric_decimals)
            field_node["field"] = f.name
            fields.append(field_node)
        node["fields"] = fields
    node["optional"] = schema.optional
    if schema.name is not None:
        node["name"] = schema.name
    if schema.version is not None:
        node["version"] = schema.version
    if schema.doc is not None:
        node["doc"] = schema.doc
    if schema.parameters:
        node["parameters"] = dict(schema.parameters)
    if schema.default is not None:
        encode = compile_encoder(schema, numeric_decimals=numeric_decimals, where="default")
        node["default"] = encode(schema.default)
    return node


def schema_from_json(node: Any) -> Schema | None:
    """The Connect schema of a parsed schema JSON value (None for JSON null).

    Raises SchemaError naming what is wrong. A NUMERIC Decimal default that arrived as
    a binary float raises NeedsExactDecimal, like a payload does."""
    if node is None:
        return None
    if type(node) is not dict:
        raise SchemaError(f"a schema must be a JSON object, got {type(node).__name__}")
    type_name = node.get("type")
    if type(type_name) is not str:
        raise SchemaError("schema must contain 'type' field")
    t = _TYPES.get(type_name)
    if t is None:
        raise SchemaError(f"unknown schema type: {type_name}")

    key_schema = value_schema = None
    fields: list[tuple[str, Schema]] = []
    if t is Type.ARRAY:
        items = node.get("items")
        if items is None:
            raise SchemaError("array schema did not specify the items type")
        value_schema = _required(items, "array items")
    elif t is Type.MAP:
        if node.get("keys") is None:
            raise SchemaError("map schema did not specify the key type")
        if node.get("values") is None:
            raise SchemaError("map schema did not specify the value type")
        key_schema = _required(node["keys"], "map keys")
        value_schema = _required(node["values"], "map values")
    elif t is Type.STRUCT:
        raw_fields = node.get("fields")
        if type(raw_fields) is not list:
            raise SchemaError('struct schema\'s "fields" argument is not an array')
        for raw in raw_fields:
            name = raw.get("field") if type(raw) is dict else None
            if type(name) is not str:
                raise SchemaError("struct schema's field name not specified properly")
            fields.append((name, _required(raw, f"field {name!r}")))

    optional = node.get("optional") is True
    name = node.get("name") if type(node.get("name")) is str else None
    version = node.get("version") if type(node.get("version")) is int else None
    doc = node.get("doc") if type(node.get("doc")) is str else None
    parameters: dict[str, str] = {}
    raw_params = node.get("parameters")
    if isinstance(raw_params, Mapping):
        for key, value in raw_params.items():
            if type(value) is not str:
                raise SchemaError("schema parameters must have string values")
            parameters[key] = value

    if t is Type.STRUCT:
        schema = Schema.struct(
            fields, name=name, optional=optional, version=version, doc=doc, parameters=parameters
        )
    else:
        schema = Schema(
            t,
            optional=optional,
            name=name,
            version=version,
            doc=doc,
            parameters=parameters,
            key_schema=key_schema,
            value_schema=value_schema,
        )
    raw_default = node.get("default")
    if raw_default is not None:
        try:
            default = compile_decoder(schema, where="default")(raw_default)
        except NeedsExactDecimal:
            raise
        except DataError as exc:
            raise SchemaError(f"invalid default value: {exc}") from None
        schema = schema.with_(default=default)
    return schema


def _required(node: Any, what: str) -> Schema:
    schema = schema_from_json(node)
    if schema is None:
        raise SchemaError(f"{what}: a schema is required, got null")
    return schema
