"""JSON values → Connect values: the decoders, compiled once per schema into closures.

The JSON forms each schema type takes are in `connect.api.json_values` (the
encoders' module, which holds what both directions share). A decoder checks a parsed
value against its schema as it converts it, and raises a `SchemaError` saying where
in the value the problem is; a null becomes the schema's default (when
`replace.null.with.default`), else null if the schema is optional, else an error.
"""

from __future__ import annotations

import base64
import binascii
import decimal as _decimal
import math
from collections.abc import Callable
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError, SchemaError
from connect.api.json_values import (
    INT_RANGES,
    Decoder,
    NeedsExactDecimal,
    _fail,
    _kind,
)
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = ["compile_decoder"]

_NON_FINITE_IN = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def compile_decoder(schema: Schema, *, replace_null: bool = True, where: str = "") -> Decoder:
    """A function from a parsed JSON value to the Connect value of `schema`."""
    inner = _decoder(schema, replace_null, where)
    if schema.default is not None and replace_null:
        null_out = schema.default
    elif schema.optional:
        null_out = None
    else:
        message = f"invalid null value for a required {schema.type} field"

        def decode_required(value: Any) -> Any:
            if value is None:
                raise _fail(where, message)
            return inner(value)

        decode_required.passthrough = getattr(inner, "passthrough", None)  # type: ignore[attr-defined]
        return decode_required

    def decode(value: Any) -> Any:
        return null_out if value is None else inner(value)

    # `passthrough`: values of this exact type decode to themselves, so a batch whose
    # payloads are all of it skips the decoder (nulls never pass: they may need a default).
    decode.passthrough = getattr(inner, "passthrough", None)  # type: ignore[attr-defined]
    return decode


def _decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """The decoder of a non-null JSON value of `schema`, built once per schema: a
    logical type by its name first, else one builder per type. Each returns the
    closure that runs per value; no layer is added around it."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _decimal_decoder(schema, where)
    if name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return _temporal_decoder(schema, replace_null, where)
    build = _DECODER_BUILDERS.get(schema.type)
    if build is None:
        raise SchemaError(f"unsupported schema type {schema.type}")
    return build(schema, replace_null, where)


def _temporal_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """Date, Time, Timestamp: an integer of the logical type's range, made its Python value."""
    name = schema.name
    logical = {Date.LOGICAL_NAME: Date, Time.LOGICAL_NAME: Time}.get(name, Timestamp)
    low, high = INT_RANGES[Type.INT64 if logical is Timestamp else Type.INT32]

    def dec_temporal(value: Any) -> Any:
        if type(value) is not int or not low <= value <= high:
            raise _fail(
                where,
                f"invalid value for {name}: the representation should be an integer "
                f"but was {_kind(value)}",
            )
        try:
            return logical.to_logical(schema, value)
        except (DataError, OverflowError) as exc:
            raise _fail(where, f"{value} is not a valid {name}: {exc}") from None

    return dec_temporal


def _int_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """An integer of its type's range (JSON has no other integer kinds)."""
    t = schema.type
    low, high = INT_RANGES[t]

    def dec_int(value: Any) -> Any:
        if type(value) is int and low <= value <= high:
            return value
        if type(value) is int:
            raise _fail(where, f"{value} is out of range for {t}")
        raise _fail(where, f"{t} expects an integer, got {_json_kind(value)}")

    return dec_int


def _float_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """A number (or Kafka's "NaN", "Infinity", "-Infinity" strings) as a float."""
    t = schema.type

    def dec_float(value: Any) -> Any:
        if type(value) is float:
            return value
        if type(value) is int or isinstance(value, _decimal.Decimal):
            return float(value)
        special = _NON_FINITE_IN.get(value) if type(value) is str else None
        if special is not None:
            return special
        raise _fail(where, f"{t} expects a number, got {_json_kind(value)}")

    return dec_float


def _bool_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """true or false only (they decode to themselves: `passthrough`)."""

    def dec_bool(value: Any) -> Any:
        if value is True or value is False:
            return value
        raise _fail(where, f"boolean expects true or false, got {_json_kind(value)}")

    dec_bool.passthrough = bool  # type: ignore[attr-defined]
    return dec_bool


def _str_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """A string (it decodes to itself: `passthrough`)."""

    def dec_str(value: Any) -> Any:
        if type(value) is str:
            return value
        raise _fail(where, f"string expects a string, got {_json_kind(value)}")

    dec_str.passthrough = str  # type: ignore[attr-defined]
    return dec_str


def _bytes_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """A base64 string, as Kafka's JsonConverter writes bytes."""

    def dec_bytes(value: Any) -> Any:
        if type(value) is not str:
            raise _fail(where, f"bytes expects a base64 string, got {_json_kind(value)}")
        return _b64decode(value, where)

    return dec_bytes


def _array_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """A JSON array, each item through the item schema's decoder."""
    assert schema.value_schema is not None
    item = compile_decoder(schema.value_schema, replace_null=replace_null, where=f"{where}[]")

    def dec_array(value: Any) -> Any:
        if type(value) is list:
            return [item(v) for v in value]
        raise _fail(where, f"array expects a JSON array, got {_json_kind(value)}")

    return dec_array


def _map_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """A JSON object when keys are strings, else an array of [key, value] pairs (as Kafka)."""
    assert schema.key_schema is not None and schema.value_schema is not None
    key = compile_decoder(schema.key_schema, replace_null=replace_null, where=f"{where} key")
    val = compile_decoder(schema.value_schema, replace_null=replace_null, where=f"{where}{{}}")
    if schema.key_schema.type is Type.STRING:

        def dec_object(value: Any) -> Any:
            if type(value) is dict:
                return {k: val(v) for k, v in value.items()}
            raise _fail(
                where,
                "maps with string keys should be encoded as JSON objects, but found "
                + _json_kind(value),
            )

        return dec_object

    def dec_pairs(value: Any) -> Any:
        if type(value) is not list:
            raise _fail(
                where,
                "maps with non-string keys should be encoded as a JSON array of "
                f"[key, value] pairs, but found {_json_kind(value)}",
            )
        out = {}
        for entry in value:
            if type(entry) is not list or len(entry) != 2:
                raise _fail(where, f"invalid map entry {entry!r}: expected [key, value]")
            k = key(entry[0])
            try:
                out[k] = val(entry[1])
            except TypeError:
                raise _fail(where, f"map key {k!r} cannot be a Python dict key") from None
        return out

    return dec_pairs


def _struct_decoder(schema: Schema, replace_null: bool, where: str) -> Decoder:
    """A JSON object, its fields taken by name into a Struct built without a second check."""
    fields = [
        (
            f.name,
            compile_decoder(
                f.schema,
                replace_null=replace_null,
                where=f"{where}.{f.name}" if where else f.name,
            ),
        )
        for f in schema.fields
    ]

    def dec_struct(value: Any) -> Any:
        if type(value) is not dict:
            raise _fail(
                where,
                f"structs should be encoded as JSON objects, but found {_json_kind(value)}",
            )
        get = value.get
        # Each decoder checked its value against its field's schema.
        return Struct.trusted(schema, [d(get(n)) for n, d in fields])

    return dec_struct


_DECODER_BUILDERS: dict[Type, Callable[[Schema, bool, str], Decoder]] = {
    **dict.fromkeys(INT_RANGES, _int_decoder),
    Type.FLOAT32: _float_decoder,
    Type.FLOAT64: _float_decoder,
    Type.BOOLEAN: _bool_decoder,
    Type.STRING: _str_decoder,
    Type.BYTES: _bytes_decoder,
    Type.ARRAY: _array_decoder,
    Type.MAP: _map_decoder,
    Type.STRUCT: _struct_decoder,
}


def _decimal_decoder(schema: Schema, where: str) -> Decoder:
    scale = Decimal.scale(schema)
    quantum = _decimal.Decimal(1).scaleb(-scale)

    def dec_decimal(value: Any) -> Any:
        if type(value) is str:
            return Decimal.to_logical(schema, _b64decode(value, where))
        if type(value) is int:
            return _decimal.Decimal(value).quantize(quantum, context=Decimal.EXACT)
        if isinstance(value, _decimal.Decimal):  # exact parse of a NUMERIC decimal
            rescaled = value.quantize(quantum, context=Decimal.EXACT)
            return rescaled if rescaled == value else value
        if type(value) is float:
            raise NeedsExactDecimal
        raise _fail(
            where,
            f"invalid value for {Decimal.LOGICAL_NAME}: expected a base64 string or a number, "
            f"got {_json_kind(value)}",
        )

    return dec_decimal


def _b64decode(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _fail(where, "invalid base64 in a bytes value") from None


_JSON_KINDS = {
    dict: "OBJECT",
    list: "ARRAY",
    str: "STRING",
    int: "NUMBER",
    float: "NUMBER",
    bool: "BOOLEAN",
    type(None): "NULL",
}


def _json_kind(value: Any) -> str:
    """The JSON node type, as Kafka's messages name it."""
    return _JSON_KINDS.get(type(value), "NUMBER" if isinstance(value, _decimal.Decimal) else "?")
