"""Connect values ⇄ Avro datums (what fastavro writes and reads), compiled per schema.

`compile_encoder(schema)` and `compile_decoder(schema)` walk a Connect schema once and
return a function for its values, or None when values pass through unchanged (every
primitive: fastavro itself turns `decimal.Decimal`, `datetime.date`, `datetime.time`
and `datetime.datetime` into the Avro logical types the schema names). The functions
are built once per schema and cached by the converter, so per record they do only
what the value needs:

- a struct becomes a dict `{field: value}` in field order, built in C with
  `dict(zip(names, struct.values()))`; a null field with a default takes the default,
  as Connect's `Struct.get` does;
- a dict read back becomes a Struct without re-validating it (fastavro has already
  decoded it against the same schema), from `list(record.values())`: fastavro returns
  fields in schema order;
- a map whose keys are not required strings is a list of `{key, value}` records;
- a Connect union (`io.confluent.connect.avro.Union`) writes its one non-null field and
  reads into the first field whose type fits the value.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.converters.avro.schema import AVRO_TYPE_UNION, KEY_FIELD, VALUE_FIELD

__all__ = ["Codec", "compile_decoder", "compile_encoder"]

Codec = Callable[[Any], Any]

#: Decoders produce each field value for its schema: no second check per field.
_trusted = Struct.trusted


def _is_avro_map(schema: Schema) -> bool:
    keys = schema.key_schema
    return keys is not None and keys.type is Type.STRING and not keys.optional


def compile_encoder(schema: Schema) -> Codec | None:
    """Connect value → Avro datum for `schema`; None means "unchanged"."""
    encode = _encoder(schema)
    if encode is None or not schema.optional:
        return encode
    inner = encode

    def optional(value: Any) -> Any:
        return None if value is None else inner(value)

    return optional


def _encoder(schema: Schema) -> Codec | None:
    t = schema.type
    if t is Type.STRUCT:
        return _struct_encoder(schema)
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = compile_encoder(schema.value_schema)
        if item is None:
            return None
        return lambda value: [item(v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        enc_value = compile_encoder(schema.value_schema)
        if _is_avro_map(schema):
            if enc_value is None:
                return None
            return lambda value: {k: enc_value(v) for k, v in value.items()}
        ek = compile_encoder(schema.key_schema) or _identity
        ev = enc_value or _identity
        return lambda value: [{KEY_FIELD: ek(k), VALUE_FIELD: ev(v)} for k, v in value.items()]
    return None  # fastavro writes primitives and logical types (and bytes-likes) itself


def _identity(value: Any) -> Any:
    return value


def _struct_encoder(schema: Schema) -> Codec:
    if schema.name == AVRO_TYPE_UNION:
        return _union_encoder(schema)
    names = tuple(f.name for f in schema.fields)
    encoders = [compile_encoder(f.schema) for f in schema.fields]
    defaults = [
        (f.index, (encoders[f.index] or _identity)(f.schema.default))
        for f in schema.fields
        if f.schema.default is not None
    ]

    def check(value: Any) -> list[Any]:
        if type(value) is Struct and value.schema is schema and not defaults:
            return value.values()
        if not isinstance(value, Struct):
            raise DataError(f"a {schema!r} value must be a Struct, got {type(value).__name__}")
        if value.schema is not schema and value.schema != schema:
            raise DataError(f"struct schema mismatch: {value.schema!r} vs {schema!r}")
        values = value.values()
        if defaults and None in values:
            values = list(values)
            for i, default in defaults:
                if values[i] is None:
                    values[i] = default
        return values

    if not any(encoders):

        def plain(value: Any) -> dict[str, Any]:
            return dict(zip(names, check(value), strict=True))

        return plain
    steps = [(i, e) for i, e in enumerate(encoders) if e is not None]

    def nested(value: Any) -> dict[str, Any]:
        values = list(check(value))
        for i, enc in steps:
            values[i] = enc(values[i])
        return dict(zip(names, values, strict=True))

    return nested


def _union_encoder(schema: Schema) -> Codec:
    branches = [(f.index, compile_encoder(f.schema) or _identity) for f in schema.fields]

    def union(value: Any) -> Any:
        if not isinstance(value, Struct):
            raise DataError(f"a union value must be a Struct, got {type(value).__name__}")
        for i, enc in branches:
            v = value.values()[i]
            if v is not None:
                return enc(v)
        return None

    return union


def compile_decoder(schema: Schema) -> Codec | None:
    """Avro datum (as fastavro reads it) → Connect value; None means "unchanged"."""
    decode = _decoder(schema)
    if decode is None or not schema.optional:
        return decode
    inner = decode

    def optional(value: Any) -> Any:
        return None if value is None else inner(value)

    return optional


def _decoder(schema: Schema) -> Codec | None:
    t = schema.type
    if t is Type.STRUCT:
        if schema.name == AVRO_TYPE_UNION:
            return _union_decoder(schema)
        decoders = [compile_decoder(f.schema) for f in schema.fields]
        if not any(decoders):

            def plain(record: dict[str, Any]) -> Struct:
                return _trusted(schema, list(record.values()))

            return plain
        steps = [(i, d) for i, d in enumerate(decoders) if d is not None]

        def nested(record: dict[str, Any]) -> Struct:
            values = list(record.values())
            for i, d in steps:
                values[i] = d(values[i])
            return _trusted(schema, values)

        return nested
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        item = compile_decoder(schema.value_schema)
        if item is None:
            return None
        return lambda value: [item(v) for v in value]
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        dv = compile_decoder(schema.value_schema)
        if _is_avro_map(schema):
            if dv is None:
                return None
            return lambda value: {k: dv(v) for k, v in value.items()}
        dk = compile_decoder(schema.key_schema) or _identity
        dv2 = dv or _identity
        return lambda entries: {dk(e[KEY_FIELD]): dv2(e[VALUE_FIELD]) for e in entries}
    return None


_PYTHON_TYPES: dict[Type, tuple[type, ...]] = {
    Type.INT8: (int,),
    Type.INT16: (int,),
    Type.INT32: (int,),
    Type.INT64: (int,),
    Type.FLOAT32: (float,),
    Type.FLOAT64: (float,),
    Type.BOOLEAN: (bool,),
    Type.STRING: (str,),
    Type.BYTES: (bytes,),
    Type.ARRAY: (list,),
    Type.MAP: (dict, list),
    Type.STRUCT: (dict,),
}
_LOGICAL_TYPES: dict[str, type] = {
    "org.apache.kafka.connect.data.Decimal": _decimal.Decimal,
    "org.apache.kafka.connect.data.Date": _dt.date,
    "org.apache.kafka.connect.data.Time": _dt.time,
    "org.apache.kafka.connect.data.Timestamp": _dt.datetime,
}


def _fits(schema: Schema, value: Any) -> bool:
    logical = _LOGICAL_TYPES.get(schema.name or "")
    if logical is not None:
        if logical is _dt.date and isinstance(value, _dt.datetime):
            return False
        return isinstance(value, logical)
    if isinstance(value, bool) and schema.type is not Type.BOOLEAN:
        return False
    if not isinstance(value, _PYTHON_TYPES[schema.type]):
        return False
    if schema.type is Type.STRUCT and isinstance(value, Mapping):
        return list(value) == [f.name for f in schema.fields]
    return True


def _union_decoder(schema: Schema) -> Codec:
    branches = [(f, compile_decoder(f.schema) or _identity) for f in schema.fields]
    width = len(schema.fields)

    def union(value: Any) -> Struct:
        for f, dec in branches:
            if _fits(f.schema, value):
                values: list[Any] = [None] * width
                values[f.index] = dec(value)
                return _trusted(schema, values)
        raise DataError(f"no branch of {schema!r} fits a {type(value).__name__}")

    return union
