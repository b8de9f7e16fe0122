"""Cast ($Key / $Value): change the type of fields, or of the whole key or value.

`spec` is either `field:type,...` (fields of a struct or map) or a single type (the
whole key or value). Types are Kafka's: int8, int16, int32, int64, float32, float64,
boolean, string. Casts follow Java's conversions, so data moves exactly as it does
under Kafka Connect:

- numbers narrow by wrapping (int64 300 → int8 44) and floats truncate toward zero;
- booleans become 1/0, and a number is true unless it is zero;
- strings parse (a number that does not parse, or is out of range, is a DataError;
  a boolean is true only for "true", any case);
- to string: Date, Time and Timestamp values are written in ISO 8601 (UTC), bytes in
  base64, decimals in plain notation;
- Decimal values cast to every numeric type; Date, Time and Timestamp values cast to
  integers as milliseconds since the epoch (what Java's `Date.getTime()` gives).

The cast schema is built once per input schema. A null key or value stays null.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
import re
import struct as _struct
from collections.abc import Callable
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConnectRecord,
    DataError,
    Importance,
    Schema,
    Struct,
    Transformation,
    Type,
)
from connect.api import Date as DateType
from connect.api import Time as TimeType
from connect.api import Timestamp as TimestampType
from connect.transforms._util import (
    KeySide,
    SchemaCache,
    SchemaCaching,
    ValueSide,
    copy_basics,
    define_replace_null,
    field_values,
    require_map,
    require_struct,
    struct_schema,
)

__all__ = ["Cast", "CastKey", "CastValue", "cast_value"]

SPEC_CONFIG = "spec"
_PURPOSE = "cast types"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

# Kafka's type names in `spec` → our types (Kafka writes float32/float64).
_TARGETS: dict[str, Type] = {
    "int8": Type.INT8,
    "int16": Type.INT16,
    "int32": Type.INT32,
    "int64": Type.INT64,
    "float32": Type.FLOAT32,
    "float64": Type.FLOAT64,
    "boolean": Type.BOOLEAN,
    "string": Type.STRING,
}
_INPUT_TYPES = frozenset(
    {
        Type.INT8,
        Type.INT16,
        Type.INT32,
        Type.INT64,
        Type.FLOAT32,
        Type.FLOAT64,
        Type.BOOLEAN,
        Type.STRING,
        Type.BYTES,
    }
)
_JAVA_INT = re.compile(r"[+-]?[0-9]+")  # what Java's Integer.parseInt accepts


def parse_spec(name: str, spec: list[str]) -> tuple[dict[str, Type], Type | None]:
    """(field → type, whole-value type) from `spec`; ConfigError on `name` when bad."""
    shown = ",".join(spec)
    if not spec:
        raise ConfigError(name, shown, "Must specify at least one field to cast.")
    casts: dict[str, Type] = {}
    whole: Type | None = None
    for mapping in spec:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ConfigError(name, shown, f"Invalid cast mapping: {mapping}")
        type_name = parts[-1].strip().lower()
        target = _TARGETS.get(type_name)
        if target is None:
            valid = ", ".join(_TARGETS)
            raise ConfigError(
                name,
                shown,
                f"Invalid type found in casting schema: {parts[-1].strip()} (valid types: {valid})",
            )
        if len(parts) == 1:
            whole = target
        else:
            casts[parts[0].strip()] = target
    if whole is not None and (casts or len(spec) > 1):
        raise ConfigError(
            name,
            shown,
            "Cast transformations that specify a type to cast the entire value to may only "
            "specify a single cast in their spec",
        )
    return casts, whole


def _spec_validator(name: str, value: Any) -> None:
    parse_spec(name, value or [])


_spec_validator.__doc__ = "list of colon-delimited pairs, e.g. foo:bar,abc:xyz"


# ------------------------------------------------------------------- the casts


def _java_wrap(number: int, bits: int) -> int:
    """Two's-complement narrowing, as Java's `(byte)`, `(short)`, `(int)` casts do."""
    mask = (1 << bits) - 1
    number &= mask
    return number - (1 << bits) if number >> (bits - 1) else number


def _float_to_long(value: float) -> int:
    """Java's `(long) double`: NaN → 0, saturating at the int64 bounds."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return 2**63 - 1 if value > 0 else -(2**63)
    return max(-(2**63), min(2**63 - 1, int(value)))


def _epoch_ms(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        return TimestampType.from_logical(TimestampType.schema(), value)
    if isinstance(value, _dt.date):
        return DateType.from_logical(DateType.schema(), value) * 86_400_000
    return TimeType.from_logical(TimeType.schema(), value)


def _to_int(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return _java_wrap(value, bits)
    if isinstance(value, float):
        if bits == 64:
            return _float_to_long(value)
        # Java: (int) of a double saturates at the int32 bounds, then narrows by wrapping.
        return _java_wrap(max(-(2**31), min(2**31 - 1, _float_to_long(value))), bits)
    if isinstance(value, decimal.Decimal):
        return _java_wrap(int(value), bits)
    if isinstance(value, str):
        if _JAVA_INT.fullmatch(value) is None:
            raise DataError(f"Value ({value}) was out of range for requested data type")
        number = int(value)
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise DataError(f"Value ({value}) was out of range for requested data type")
        return number
    if isinstance(value, (_dt.date, _dt.time)):
        return _java_wrap(_epoch_ms(value), bits)
    raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")


def _to_float(value: Any, single: bool) -> float:
    if isinstance(value, bool):
        result = 1.0 if value else 0.0
    elif isinstance(value, (int, float, decimal.Decimal)):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value)
        except ValueError:
            raise DataError(f"Value ({value}) was out of range for requested data type") from None
    elif isinstance(value, (_dt.date, _dt.time)):
        result = float(_epoch_ms(value))
    else:
        raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")
    if single and math.isfinite(result):
        try:  # round to float32, as Java's floatValue() does
            result = _struct.unpack("f", _struct.pack("f", result))[0]
        except OverflowError:
            result = math.copysign(math.inf, result)
    return result


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, decimal.Decimal)):
        return value != 0
    if isinstance(value, float):
        return _float_to_long(value) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")


def _java_double(value: float) -> str:
    """Java's Double.toString for the common cases (1.0, 1.5E10, NaN, Infinity)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "e" not in text else f"{value:.1f}"
    mantissa, _, exponent = f"{value!r}".partition("e")
    if not exponent:
        mantissa, _, exponent = f"{value:e}".partition("e")
        mantissa = mantissa.rstrip("0")
    if "." not in mantissa:
        mantissa += ".0"
    elif mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exponent)}"


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, _dt.datetime):
        ms = TimestampType.from_logical(TimestampType.schema(), value)
        moment = _EPOCH + _dt.timedelta(milliseconds=ms)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, _dt.time):
        return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return str(value)


_CASTS: dict[Type, Callable[[Any], Any]] = {
    Type.INT8: lambda v: _to_int(v, 8),
    Type.INT16: lambda v: _to_int(v, 16),
    Type.INT32: lambda v: _to_int(v, 32),
    Type.INT64: lambda v: _to_int(v, 64),
    Type.FLOAT32: lambda v: _to_float(v, True),
    Type.FLOAT64: lambda v: _to_float(v, False),
    Type.BOOLEAN: _to_boolean,
    Type.STRING: _to_string,
}


def _check_input(schema: Schema | None, value: Any) -> None:
    if schema is not None:
        if schema.type not in _INPUT_TYPES:
            raise DataError(f"Cast transformation does not support casting from {schema.type}")
        return
    if isinstance(value, (Struct, list, dict)):
        raise DataError(f"Cast transformation does not support casting from {type(value).__name__}")


def cast_value(schema: Schema | None, value: Any, target: Type) -> Any:
    """`value` (of `schema`, or schemaless) cast to `target`; None stays None."""
    if value is None:
        return None
    _check_input(schema, value)
    return _CASTS[target](value)


# ----------------------------------------------------------------- transform


class Cast(SchemaCaching, Transformation[ConnectRecord]):
    """Cast fields, or the whole key or value, to another primitive type."""

    _CONFIG = define_replace_null(
        ConfigDef().define(
            SPEC_CONFIG,
            ConfigType.LIST,
            validator=_spec_validator,
            importance=Importance.HIGH,
            documentation="List of fields and the type to cast them to of the form "
            "field1:type,field2:type to cast fields of Maps or Structs. A single type to "
            "cast the entire value. Valid types are int8, int16, int32, int64, float32, "
            "float64, boolean, and string. Note that binary fields can only be cast to string.",
        )
    )

    _schemas: SchemaCache[tuple[Schema, tuple[Type | None, ...]]]

    def __init__(self) -> None:
        super().__init__()
        self._casts: dict[str, Type] = {}
        self._whole: Type | None = None

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._casts, self._whole = parse_spec(SPEC_CONFIG, parsed[SPEC_CONFIG])

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        whole = self._whole
        if schema is None:
            if whole is not None:
                return self.new_record(record, None, cast_value(None, value, whole))  # type: ignore[attr-defined]
            if value is None:
                return record
            updated = dict(require_map(value, _PURPOSE))
            for name, target in self._casts.items():
                if name in updated:
                    updated[name] = cast_value(None, updated[name], target)
            return self.new_record(record, None, updated)  # type: ignore[attr-defined]
        cast_schema, targets = self._schemas.get_or_build(schema, self._cast_schema)
        if whole is not None:
            return self.new_record(record, cast_schema, cast_value(schema, value, whole))  # type: ignore[attr-defined]
        if value is None:
            return self.new_record(record, cast_schema, None)  # type: ignore[attr-defined]
        struct = require_struct(value, _PURPOSE)
        values = field_values(struct, self._replace_null)
        for i, target in enumerate(targets):
            if target is not None and values[i] is not None:
                values[i] = _CASTS[target](values[i])
        return self.new_record(record, cast_schema, Struct.trusted(cast_schema, values))  # type: ignore[attr-defined]

    def _cast_schema(self, schema: Schema) -> tuple[Schema, tuple[Type | None, ...]]:
        """The cast schema and, per input field, its target type (None: unchanged)."""
        if self._whole is not None:
            _check_input(schema, None)
            default = cast_value(schema, schema.default, self._whole)
            return copy_basics(schema, type=self._whole, default=default), ()
        if schema.type is not Type.STRUCT:
            raise DataError(f"Only Struct objects supported for [{_PURPOSE}], found: {schema.type}")
        fields: list[tuple[str, Schema]] = []
        targets: list[Type | None] = []
        for field in schema.fields:
            target = self._casts.get(field.name)
            targets.append(target)
            if target is None:
                fields.append((field.name, field.schema))
                continue
            _check_input(field.schema, None)
            fields.append(
                (
                    field.name,
                    Schema(
                        target,
                        optional=field.schema.optional,
                        default=cast_value(field.schema, field.schema.default, target),
                    ),
                )
            )
        return struct_schema(schema, fields), tuple(targets)


class CastKey(KeySide, Cast):
    """Cast$Key: cast the record key or its fields."""


class CastValue(ValueSide, Cast):
    """Cast$Value: cast the record value or its fields."""


Cast.Key = CastKey  # type: ignore[attr-defined]
Cast.Value = CastValue  # type: ignore[attr-defined]
