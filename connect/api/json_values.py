"""Connect values ⇄ JSON values, as Kafka's JsonConverter writes and reads payloads.

Part of the plugin API with `json_decoders`, `json_schema` and `json_arrow_read`: the
JSON format is the one the runtime's JsonConverter (connect.converters) writes, and a
plugin that reads or writes that format itself uses this one copy of it.

Encoders (here) turn a Connect value into a Python value that orjson serialises to the
bytes Kafka writes; decoders (`json_decoders`) turn a parsed JSON value back into a
Connect value. Both are *compiled* once per schema into closures, because the
per-record Python cost is the limit: a string schema costs one type check per record,
not a walk of the schema.

The JSON forms, per schema type (Kafka's, so existing topics read unchanged):

| schema                 | JSON                                                          |
| int8 … int64           | number                                                        |
| float, double          | number; Java's `Double.toString` form (`1.0E10`, `1.0E-4`);   |
|                        | NaN and ±Infinity as the strings Jackson writes               |
| boolean, string        | true/false, string                                            |
| bytes                  | base64 string (standard alphabet, padded)                     |
| array                  | array                                                         |
| map, string keys       | object                                                        |
| map, other keys        | array of `[key, value]` pairs                                 |
| struct                 | object in field order                                         |
| Decimal                | base64 of the unscaled two's-complement bytes, or a number    |
|                        | (`decimal.format=NUMERIC`) in BigDecimal.toString form         |
| Date / Time / Timestamp| int days since epoch / int ms since midnight / long ms epoch  |

A null value becomes the schema's default (when `replace.null.with.default`), else
null if the schema is optional, else an error. Errors are `SchemaError`s whose message
says where in the value the problem is; the converter adds the topic.

Without a schema (schemaless), values are encoded by their Python type the way Kafka
infers a schema from a Java class; a type Kafka has no schema type for (datetime,
Decimal, …) is an error. Schemaless floats are written by orjson, which agrees with
Java for magnitudes in [1e-3, 1e7) and writes other magnitudes without Java's `E`
notation (the number is the same; only schema-driven payloads match Java there).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal as _decimal
import math
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError, SchemaError
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = [
    "INT_RANGES",
    "OWNED",
    "Decoder",
    "Encoder",
    "NeedsExactDecimal",
    "compile_encoder",
    "dumps_schemaless",
    "encode_schemaless",
    "java_double",
]

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]

#: The integer types' ranges, which the JSON codecs and the runtime's column codecs
#: (connect.converters.json_columns) check values against.
INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_NON_FINITE_OUT = {
    math.inf: orjson.Fragment(b'"Infinity"'),
    -math.inf: orjson.Fragment(b'"-Infinity"'),
}
_NAN_OUT = orjson.Fragment(b'"NaN"')


class NeedsExactDecimal(Exception):
    """A NUMERIC Decimal arrived as a binary float: the converter re-parses the
    message with exact decimals (rare, so the common path stays on orjson)."""


# ------------------------------------------------------------------ formatting


def java_double(x: float) -> str:
    """`x` as Java's `Double.toString` writes it (what Jackson puts in JSON):
    plain for 1e-3 ≤ |x| < 1e7, else `d.dddE±n` with the shortest digits."""
    if x == 0.0 or 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "e" not in text else format(x, "f")
    sign, digits, exponent = _decimal.Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    ds = list(digits)
    while len(ds) > 1 and ds[-1] == 0:
        ds.pop()
        exponent += 1
    power = exponent + len(ds) - 1
    mantissa = f"{ds[0]}." + ("".join(map(str, ds[1:])) or "0")
    return ("-" if sign else "") + f"{mantissa}E{power}"


def _float_out(x: float) -> Any:
    """A float as orjson should write it to match Java: itself when orjson's text
    already agrees, else a pre-rendered fragment."""
    if x == 0.0 or 1e-3 <= abs(x) < 1e7:
        return x
    if x != x:
        return _NAN_OUT
    fragment = _NON_FINITE_OUT.get(x)
    if fragment is not None:
        return fragment
    return orjson.Fragment(java_double(x).encode("ascii"))


def _kind(value: Any) -> str:
    return type(value).__name__


def _fail(where: str, message: str) -> SchemaError:
    return SchemaError(f"{where}: {message}" if where else message)


# -------------------------------------------------------------------- encoders


def compile_encoder(
    schema: Schema, *, numeric_decimals: bool = False, replace_null: bool = True, where: str = ""
) -> Encoder:
    """A function from a Connect value of `schema` to its JSON-ready form."""
    inner = _encoder(schema, numeric_decimals, replace_null, where)
    null_out: Any = None
    null_error: str | None = None
    if schema.default is not None and replace_null:
        null_out = inner(schema.default)
    elif not schema.optional:
        null_error = f"null value for a required {schema.type} with no default value"
    if null_error is None:

        def encode(value: Any) -> Any:
            return null_out if value is None else inner(value)

    else:
        message = null_error

        def encode(value: Any) -> Any:
            if value is None:
                raise _fail(where, message)
            return inner(value)

    encode.passthrough = getattr(inner, "passthrough", None)  # type: ignore[attr-defined]
    return encode


def _encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """The encoder of a non-null value of `schema`, built once per schema: a logical
    type by its name first (its value is not of its base type), else one builder per
    type. Each returns the closure that runs per value; no layer is added around it."""
    logical = _logical_encoder(schema, numeric, where)
    if logical is not None:
        return logical
    build = _ENCODER_BUILDERS.get(schema.type)
    if build is None:
        raise SchemaError(f"unsupported schema type {schema.type}")
    return build(schema, numeric, replace_null, where)


def _logical_encoder(schema: Schema, numeric: bool, where: str) -> Encoder | None:
    """Decimal, Date, Time and Timestamp by their logical name; None for the rest."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _decimal_encoder(schema, numeric, where)
    if name == Date.LOGICAL_NAME:
        return _temporal_encoder(
            schema,
            lambda v: (
                type(v) is _dt.date or (isinstance(v, _dt.date) and not isinstance(v, _dt.datetime))
            ),
            Date.from_logical,
            "date",
            where,
        )
    if name == Time.LOGICAL_NAME:
        return _temporal_encoder(
            schema, lambda v: isinstance(v, _dt.time), Time.from_logical, "time", where
        )
    if name == Timestamp.LOGICAL_NAME:
        return _temporal_encoder(
            schema,
            lambda v: isinstance(v, _dt.datetime),
            Timestamp.from_logical,
            "datetime",
            where,
        )
    return None


def _int_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """An int of its type's range; an int subclass (not bool) is made a plain int."""
    t = schema.type
    low, high = INT_RANGES[t]

    def enc_int(value: Any) -> Any:
        if type(value) is not int:
            if not isinstance(value, int) or isinstance(value, bool):
                raise _fail(where, f"{t} expects an int, got {_kind(value)}")
            value = int(value)
        if low <= value <= high:
            return value
        raise _fail(where, f"{value} is out of range for {t}")

    return enc_int


def _float_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """A float; an int is widened. Values orjson would print unlike Java go through `_float_out`."""
    t = schema.type

    def enc_float(value: Any) -> Any:
        if type(value) is not float:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise _fail(where, f"{t} expects a float, got {_kind(value)}")
            value = float(value)
        if value == 0.0 or 1e-3 <= abs(value) < 1e7:
            return value
        return _float_out(value)

    return enc_float


def _bool_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """True or False only (orjson writes them as they are: `passthrough`)."""

    def enc_bool(value: Any) -> Any:
        if value is True or value is False:
            return value
        raise _fail(where, f"boolean expects a bool, got {_kind(value)}")

    enc_bool.passthrough = bool  # type: ignore[attr-defined]
    return enc_bool


def _str_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """A str (a subclass is made a plain str; orjson writes them as they are: `passthrough`)."""

    def enc_str(value: Any) -> Any:
        if type(value) is str:
            return value
        if isinstance(value, str):
            return str(value)
        raise _fail(where, f"string expects a str, got {_kind(value)}")

    enc_str.passthrough = str  # type: ignore[attr-defined]
    return enc_str


def _bytes_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """Bytes as base64 text, as Kafka's JsonConverter writes them."""

    def enc_bytes(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return base64.b64encode(value).decode("ascii")
        raise _fail(where, f"bytes expects bytes, got {_kind(value)}")

    return enc_bytes


def _array_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """A list or tuple, each item through the item schema's encoder."""
    assert schema.value_schema is not None
    item = compile_encoder(
        schema.value_schema,
        numeric_decimals=numeric,
        replace_null=replace_null,
        where=f"{where}[]",
    )

    def enc_array(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [item(v) for v in value]
        raise _fail(where, f"array expects a list, got {_kind(value)}")

    return enc_array


def _map_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """A JSON object when keys are strings, else a list of [key, value] pairs (as Kafka)."""
    assert schema.key_schema is not None and schema.value_schema is not None
    key = compile_encoder(
        schema.key_schema,
        numeric_decimals=numeric,
        replace_null=replace_null,
        where=f"{where} key",
    )
    val = compile_encoder(
        schema.value_schema,
        numeric_decimals=numeric,
        replace_null=replace_null,
        where=f"{where}{{}}",
    )
    if schema.key_schema.type is Type.STRING:

        def enc_object(value: Any) -> Any:
            if isinstance(value, Mapping):
                return {key(k): val(v) for k, v in value.items()}
            raise _fail(where, f"map expects a dict, got {_kind(value)}")

        return enc_object

    def enc_pairs(value: Any) -> Any:
        if isinstance(value, Mapping):
            return [[key(k), val(v)] for k, v in value.items()]
        raise _fail(where, f"map expects a dict, got {_kind(value)}")

    return enc_pairs


def _struct_encoder(schema: Schema, numeric: bool, replace_null: bool, where: str) -> Encoder:
    """A Struct of exactly this schema as a JSON object in field order."""
    fields = [
        (
            f.name,
            f.index,
            compile_encoder(
                f.schema,
                numeric_decimals=numeric,
                replace_null=replace_null,
                where=f"{where}.{f.name}" if where else f.name,
            ),
        )
        for f in schema.fields
    ]

    def enc_struct(value: Any) -> Any:
        if type(value) is not Struct:
            if isinstance(value, Struct):
                pass
            else:
                raise _fail(where, f"struct expects a Struct, got {_kind(value)}")
        if value.schema is not schema and value.schema != schema:
            raise _fail(where, f"mismatching struct schema: {value.schema!r} vs {schema!r}")
        # All field values in one call: no by-name lookup per field on the hot path.
        values = value.values()
        return {n: e(values[i]) for n, i, e in fields}

    return enc_struct


_ENCODER_BUILDERS: dict[Type, Callable[[Schema, bool, bool, str], Encoder]] = {
    **dict.fromkeys(INT_RANGES, _int_encoder),
    Type.FLOAT32: _float_encoder,
    Type.FLOAT64: _float_encoder,
    Type.BOOLEAN: _bool_encoder,
    Type.STRING: _str_encoder,
    Type.BYTES: _bytes_encoder,
    Type.ARRAY: _array_encoder,
    Type.MAP: _map_encoder,
    Type.STRUCT: _struct_encoder,
}


def _decimal_encoder(schema: Schema, numeric: bool, where: str) -> Encoder:
    Decimal.scale(schema)  # a bad scale parameter fails when the schema is first used

    def enc_decimal(value: Any) -> Any:
        if not isinstance(value, _decimal.Decimal):
            raise _fail(where, f"Decimal expects a decimal.Decimal, got {_kind(value)}")
        try:
            raw = Decimal.from_logical(schema, value)
        except DataError as exc:
            raise _fail(where, str(exc)) from None
        if numeric:
            exact = Decimal.to_logical(schema, raw)
            return orjson.Fragment(str(exact).encode("ascii"))
        return base64.b64encode(raw).decode("ascii")

    return enc_decimal


def _temporal_encoder(
    schema: Schema,
    accepts: Callable[[Any], bool],
    to_int: Callable[[Schema, Any], int],
    expected: str,
    where: str,
) -> Encoder:
    def enc_temporal(value: Any) -> Any:
        if not accepts(value):
            raise _fail(where, f"{schema.name} expects a {expected}, got {_kind(value)}")
        return to_int(schema, value)

    return enc_temporal


# ------------------------------------------------------------ schemaless encode


def _schemaless_default(value: Any) -> Any:
    """orjson's fallback for the types it does not write itself."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Struct):
        return compile_encoder(value.schema)(value)
    raise TypeError(f"Python type {_kind(value)} does not have a corresponding schema type")


_SCHEMALESS_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


#: An option that makes orjson add a newline, which callers slice off: the slice is a
#: small exact-size copy, while orjson's own result keeps a large allocation alive
#: (keeping thousands of those costs far more than making them: docs/performance.md).
OWNED = orjson.OPT_APPEND_NEWLINE


def dumps_schemaless(value: Any) -> bytes:
    """orjson with the schemaless options, for batch paths: raises TypeError where
    `encode_schemaless` would take its slow walk. The result ends with a newline."""
    return orjson.dumps(value, default=_schemaless_default, option=_SCHEMALESS_OPTIONS | OWNED)


def encode_schemaless(value: Any) -> bytes:
    """JSON bytes of a value without a schema (Kafka infers the type from the value).

    orjson writes the common shapes in one C call; when it cannot (a map with
    non-string keys, an int beyond 64 bits, an unsupported type) the slow walk below
    produces Kafka's form or the error."""
    try:
        return orjson.dumps(value, default=_schemaless_default, option=_SCHEMALESS_OPTIONS | OWNED)[
            :-1
        ]
    except TypeError:
        pass
    return orjson.dumps(_walk_schemaless(value, ""), option=_SCHEMALESS_OPTIONS | OWNED)[:-1]


def _walk_schemaless(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value if type(value) in (bool, str) or value is None else str(value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise _fail(where, f"{value} is out of range for int64")
        return int(value)
    if isinstance(value, float):
        return _float_out(float(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (list, tuple)):
        return [_walk_schemaless(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        if all(type(k) is str for k in value):
            return {k: _walk_schemaless(v, f"{where}[{k!r}]") for k, v in value.items()}
        return [
            [_walk_schemaless(k, f"{where} key"), _walk_schemaless(v, f"{where}[{k!r}]")]
            for k, v in value.items()
        ]
    if isinstance(value, Struct):
        return compile_encoder(value.schema, where=where)(value)
    raise _fail(where, f"Python type {_kind(value)} does not have a corresponding schema type")
