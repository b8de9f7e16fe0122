"""Connect schemas ⇄ Avro schemas, the mapping Confluent's AvroData uses.

Connect → Avro (`to_avro`):

| Connect                      | Avro                                                        |
| int8 / int16                 | `int` with `"connect.type": "int8"` / `"int16"`             |
| int32, int64                 | `int`, `long`                                               |
| float32, float64             | `float`, `double`                                           |
| boolean, string, bytes       | `boolean`, `string`, `bytes`                                |
| Decimal (bytes)              | `bytes`, `scale`, `precision` (`connect.decimal.precision`  |
|                              | or 64), `logicalType: decimal`                              |
| Date / Time / Timestamp      | `int` date / `int` time-millis / `long` timestamp-millis    |
| array                        | `array` of the item schema                                  |
| map, keys a required string  | `map` of the value schema                                   |
| map, any other keys          | `array` of records `MapEntry` {key, value}                  |
| struct                       | `record` named by the schema name (`a.b.C` → namespace     |
|                              | `a.b`, name `C`), or `io.confluent.connect.avro.ConnectDefault` |
| optional T                   | union `["null", T]`, or `[T, "null"]` when T has a default  |

Every non-union Avro schema also carries the Connect metadata as properties:
`connect.doc`, `connect.version`, `connect.parameters` (all parameters, strings),
`connect.default` (a schema default, unless it came from an Avro field default),
`connect.name` and `connect.type`; parameters whose name starts with `avro` are copied
as properties too. Record fields get Avro defaults: the field schema's default, or null
for an optional field. A struct's `io.confluent.connect.avro.record.doc` and
`io.confluent.connect.avro.field.doc.<field>` parameters become Avro docs.

Avro → Connect (`to_connect`) reverses this, and maps what Connect cannot say directly:
an enum becomes a string with the `io.confluent.connect.avro.Enum` parameters, a fixed
becomes bytes with `connect.fixed.size`, a union other than null-and-one-type becomes a
struct named `io.confluent.connect.avro.Union` with one optional field per branch, and
logical types other than the four above read as their underlying type; that direction
lives in `schema_read`. The functions are pure; the converter caches their results per
schema object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = [
    "AVRO_TYPE_ENUM",
    "AVRO_TYPE_UNION",
    "NAMESPACE",
    "default_to_avro",
    "record_full_name",
    "to_avro",
]

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
DEFAULT_SCHEMA_FULL_NAME = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
MAP_ENTRY_TYPE_NAME = "MapEntry"
KEY_FIELD = "key"
VALUE_FIELD = "value"

CONNECT_NAME_PROP = "connect.name"
CONNECT_DOC_PROP = "connect.doc"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_DEFAULT_VALUE_PROP = "connect.default"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_INTERNAL_TYPE_NAME = "connect.internal.type"
CONNECT_TYPE_PROP = "connect.type"
CONNECT_FIXED_SIZE_PROP = "connect.fixed.size"
CONNECT_DECIMAL_PRECISION_PROP = "connect.decimal.precision"
DECIMAL_PRECISION_DEFAULT = 64
AVRO_RECORD_DOC_PROP = f"{NAMESPACE}.record.doc"
AVRO_FIELD_DOC_PREFIX_PROP = f"{NAMESPACE}.field.doc."
AVRO_FIELD_DEFAULT_FLAG_PROP = f"{NAMESPACE}.field.default"
AVRO_ENUM_DOC_PREFIX_PROP = f"{NAMESPACE}.enum.doc."
AVRO_ENUM_DEFAULT_PREFIX_PROP = f"{NAMESPACE}.enum.default."
AVRO_TYPE_UNION = f"{NAMESPACE}.Union"
AVRO_TYPE_ENUM = f"{NAMESPACE}.Enum"

_PRIMITIVE_TO_AVRO = {
    Type.INT8: "int",
    Type.INT16: "int",
    Type.INT32: "int",
    Type.INT64: "long",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
}
_LOGICAL_TO_AVRO = {
    Date.LOGICAL_NAME: "date",
    Time.LOGICAL_NAME: "time-millis",
    Timestamp.LOGICAL_NAME: "timestamp-millis",
}
# Names we generate for unnamed structs: "ConnectDefault", "ConnectDefault2", …


# ---------------------------------------------------------------- Connect → Avro


class _FromConnect:
    """State of one conversion: the named types already written, so a second use of
    the same struct refers to it by name (Avro forbids defining a name twice)."""

    def __init__(self, *, enhanced: bool) -> None:
        self.enhanced = enhanced
        self.defined: dict[str, Any] = {}  # full name → the Connect schema it stands for

    def claim(self, namespace: str | None, name: str, schema: Any, *, generated: bool) -> Any:
        """The name to define (str), or the full name to refer to (a 1-tuple)."""
        n = 1
        while True:
            candidate = name if n == 1 else f"{name}{n}"
            full = f"{namespace}.{candidate}" if namespace else candidate
            known = self.defined.get(full)
            if known is None:
                self.defined[full] = schema
                return candidate
            if known == schema:
                return (full,)
            if not generated:
                raise DataError(f"two different schemas are both named {full!r}")
            n += 1


def _split_name(full: str) -> tuple[str | None, str]:
    namespace, dot, name = full.rpartition(".")
    return (namespace if dot else None), name


def to_avro(schema: Schema, *, enhanced: bool = False) -> Any:
    """The Avro schema (JSON-ready: str, dict or list) for a Connect schema."""
    return _from_connect(schema, _FromConnect(enhanced=enhanced), ignore_optional=False)


def _from_connect(schema: Schema, ctx: _FromConnect, *, ignore_optional: bool) -> Any:
    """The Avro schema of `schema`: its type (a union, a record or anything else), then
    Connect's metadata as properties, then the union with null that makes it optional."""
    params = schema.parameters or {}
    if schema.type is Type.STRUCT:
        if schema.name == AVRO_TYPE_UNION:
            return _union(schema, ctx)
        base = _record(schema, params, ctx)
        if isinstance(base, tuple):
            # A reference: the metadata was written where the name was defined.
            return _optional(base[0], schema, ignore_optional)
    else:
        base = _not_a_record(schema, params, ctx)
    _add_metadata(base, schema, params)
    avro: Any = base["type"] if len(base) == 1 else base
    return _optional(avro, schema, ignore_optional)


def _union(schema: Schema, ctx: _FromConnect) -> list[Any]:
    """An Avro union read back as Connect's Union struct: a branch per field."""
    branches: list[Any] = ["null"] if schema.optional else []
    for f in schema.fields:
        branches.append(_from_connect(f.schema, ctx, ignore_optional=True))
    return branches


def _not_a_record(schema: Schema, params: Mapping[str, str], ctx: _FromConnect) -> dict[str, Any]:
    """The Avro type of every schema but a struct, before its metadata."""
    t = schema.type
    if t in (Type.INT8, Type.INT16):
        return {"type": "int"}  # Avro has no smaller int: connect.type says which
    if t is Type.STRING and ctx.enhanced and AVRO_TYPE_ENUM in params:
        return _enum(params)
    if t is Type.BYTES and ctx.enhanced and CONNECT_FIXED_SIZE_PROP in params and schema.name:
        namespace, short = _split_name(schema.name)
        base: dict[str, Any] = {"type": "fixed", "name": short}
        if namespace:
            base["namespace"] = namespace
        base["size"] = int(params[CONNECT_FIXED_SIZE_PROP])
        return base
    if t.is_primitive:
        base = {"type": _PRIMITIVE_TO_AVRO[t]}
        if t is Type.BYTES and schema.name == Decimal.LOGICAL_NAME:
            base["scale"] = Decimal.scale(schema)
            base["precision"] = int(
                params.get(CONNECT_DECIMAL_PRECISION_PROP, DECIMAL_PRECISION_DEFAULT)
            )
        return base
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        items = _from_connect(schema.value_schema, ctx, ignore_optional=False)
        return {"type": "array", "items": items}
    return _map(schema, ctx)


def _enum(params: Mapping[str, str]) -> dict[str, Any]:
    """A string that came from an Avro enum (enhanced.avro.schema.support): the enum
    again, its symbols, doc and default from the parameters reading it left."""
    namespace, short = _split_name(params[AVRO_TYPE_ENUM])
    prefix = AVRO_TYPE_ENUM + "."
    symbols = [v for k, v in params.items() if k.startswith(prefix)]
    base: dict[str, Any] = {"type": "enum", "name": short}
    if namespace:
        base["namespace"] = namespace
    if AVRO_ENUM_DOC_PREFIX_PROP + short in params:
        base["doc"] = params[AVRO_ENUM_DOC_PREFIX_PROP + short]
    base["symbols"] = symbols
    if AVRO_ENUM_DEFAULT_PREFIX_PROP + short in params:
        base["default"] = params[AVRO_ENUM_DEFAULT_PREFIX_PROP + short]
    return base


def _map(schema: Schema, ctx: _FromConnect) -> dict[str, Any]:
    """An Avro map when the keys are required strings; else, as Confluent writes it, an
    array of MapEntry records (key, value)."""
    assert schema.key_schema is not None and schema.value_schema is not None
    keys = schema.key_schema
    if keys.type is Type.STRING and not keys.optional:
        values = _from_connect(schema.value_schema, ctx, ignore_optional=False)
        return {"type": "map", "values": values}
    if schema.name is None:
        namespace, short, internal = NAMESPACE, MAP_ENTRY_TYPE_NAME, False
    else:
        (namespace, short), internal = _split_name(schema.name), True
    claimed = ctx.claim(
        namespace, short, ("map", keys, schema.value_schema), generated=not internal
    )
    if isinstance(claimed, tuple):
        entry: Any = claimed[0]
    else:
        entry = {"type": "record", "name": claimed}
        if namespace:
            entry["namespace"] = namespace
        entry["fields"] = [
            _field(KEY_FIELD, keys, None, ctx),
            _field(VALUE_FIELD, schema.value_schema, None, ctx),
        ]
        if internal:
            entry[CONNECT_INTERNAL_TYPE_NAME] = MAP_ENTRY_TYPE_NAME
    return {"type": "array", "items": entry}


def _record(
    schema: Schema, params: Mapping[str, str], ctx: _FromConnect
) -> dict[str, Any] | tuple[str]:
    """A struct's record, or a 1-tuple of its full name when a record of that name was
    already defined in this conversion (Avro allows a name to be defined once)."""
    required = schema.with_(optional=False, default=None) if schema.optional else schema
    if schema.name is None:
        namespace, short, generated = NAMESPACE, DEFAULT_SCHEMA_NAME, True
    else:
        (namespace, short), generated = _split_name(schema.name), False
    claimed = ctx.claim(namespace, short, required, generated=generated)
    if isinstance(claimed, tuple):
        return claimed
    base: dict[str, Any] = {"type": "record", "name": claimed}
    if namespace:
        base["namespace"] = namespace
    if AVRO_RECORD_DOC_PROP in params:
        base["doc"] = params[AVRO_RECORD_DOC_PROP]
    base["fields"] = [
        _field(f.name, f.schema, params.get(AVRO_FIELD_DOC_PREFIX_PROP + f.name), ctx)
        for f in schema.fields
    ]
    return base


def _add_metadata(base: dict[str, Any], schema: Schema, params: Mapping[str, str]) -> None:
    """Connect's metadata as properties of the Avro type, in Confluent's order (the
    schema's text, and so its registry id, depends on it)."""
    if schema.doc is not None:
        base[CONNECT_DOC_PROP] = schema.doc
    if schema.version is not None:
        base[CONNECT_VERSION_PROP] = schema.version
    if params:
        base[CONNECT_PARAMETERS_PROP] = dict(params)
    if schema.default is not None and AVRO_FIELD_DEFAULT_FLAG_PROP not in params:
        base[CONNECT_DEFAULT_VALUE_PROP] = default_to_avro(schema, schema.default)
    if schema.name is not None:
        base[CONNECT_NAME_PROP] = schema.name
    if schema.type in (Type.INT8, Type.INT16):
        base[CONNECT_TYPE_PROP] = schema.type.value
    if schema.name == Decimal.LOGICAL_NAME:
        base["logicalType"] = "decimal"
    elif schema.name in _LOGICAL_TO_AVRO:
        base["logicalType"] = _LOGICAL_TO_AVRO[schema.name]
    for key, value in params.items():
        if key.startswith("avro"):
            base[key] = value


def _optional(avro: Any, schema: Schema, ignore_optional: bool) -> Any:
    if ignore_optional or not schema.optional:
        return avro
    return [avro, "null"] if schema.default is not None else ["null", avro]


def _field(name: str, schema: Schema, doc: str | None, ctx: _FromConnect) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": _from_connect(schema, ctx, ignore_optional=False)}
    if doc is not None:
        out["doc"] = doc
    if schema.default is not None:
        out["default"] = default_to_avro(schema, schema.default)
    elif schema.optional:
        out["default"] = None
    return out


def default_to_avro(schema: Schema, value: Any) -> Any:
    """A Connect value as the JSON of an Avro default (bytes as ISO-8859-1 text)."""
    if value is None:
        return None
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return Decimal.from_logical(schema, value).decode("iso-8859-1")
    if name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    t = schema.type
    if t is Type.BYTES:
        return bytes(value).decode("iso-8859-1")
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return [default_to_avro(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
            return {k: default_to_avro(schema.value_schema, v) for k, v in value.items()}
        return [
            {
                KEY_FIELD: default_to_avro(schema.key_schema, k),
                VALUE_FIELD: default_to_avro(schema.value_schema, v),
            }
            for k, v in value.items()
        ]
    if t is Type.STRUCT:
        if not isinstance(value, Struct):
            raise DataError(f"the default of struct {schema.name or ''} must be a Struct")
        return {f.name: default_to_avro(f.schema, value.get(f.name)) for f in schema.fields}
    return value


def record_full_name(avro: Any) -> str | None:
    """The full name of a record schema (the subject of RecordNameStrategy), else None."""
    if isinstance(avro, dict) and avro.get("type") == "record":
        name = avro["name"]
        namespace = avro.get("namespace")
        return name if "." in name or not namespace else f"{namespace}.{name}"
    return None
