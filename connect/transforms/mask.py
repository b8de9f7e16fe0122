"""MaskField ($Key / $Value): replace the values of `fields` with the null value of
their type (0, false, "", an empty list or map, the epoch …) or with `replacement`
converted to the field's type (numbers and strings only). Null values stay null;
a null key or value passes through."""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataError,
    Importance,
    Schema,
    Struct,
    Transformation,
    Type,
    is_logical,
    non_empty_string,
    validate_value,
)
from connect.api import Date as DateType
from connect.api import Decimal as DecimalType
from connect.api import Time as TimeType
from connect.api import Timestamp as TimestampType
from connect.transforms._util import (
    Configured,
    KeySide,
    ValueSide,
    non_empty_list,
    require_map,
    require_struct,
)

__all__ = ["MaskField", "MaskFieldKey", "MaskFieldValue"]

FIELDS_CONFIG = "fields"
REPLACEMENT_CONFIG = "replacement"
_PURPOSE = "mask fields"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

# The null-equivalent value of each type (with a schema: by type or logical name).
_MASK_BY_TYPE: dict[Type, Any] = {
    Type.INT8: 0,
    Type.INT16: 0,
    Type.INT32: 0,
    Type.INT64: 0,
    Type.FLOAT32: 0.0,
    Type.FLOAT64: 0.0,
    Type.BOOLEAN: False,
    Type.STRING: "",
    Type.BYTES: b"",
}
_MASK_BY_LOGICAL: dict[type, Any] = {
    DecimalType: decimal.Decimal(0),
    DateType: _dt.date(1970, 1, 1),
    TimeType: _dt.time(0),
    TimestampType: _EPOCH,
}
_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


def _mask_schemaless(value: Any) -> Any:
    """The null-equivalent of a value known only by its Python type."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, str):
        return ""
    if isinstance(value, (bytes, bytearray)):
        return b""
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, _dt.datetime):
        return _EPOCH
    if isinstance(value, _dt.date):
        return _dt.date(1970, 1, 1)
    if isinstance(value, _dt.time):
        return _dt.time(0)
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    raise DataError(f"Cannot mask value of type: {type(value).__name__}")


def _replace(value: Any, replacement: str, schema: Schema | None) -> Any:
    """`replacement` converted to the type of `value` (numbers and strings only)."""
    try:
        if (schema is not None and is_logical(schema) is DecimalType) or isinstance(
            value, decimal.Decimal
        ):
            return decimal.Decimal(replacement)
        if schema is not None and is_logical(schema) is not None:
            raise DataError(f"Cannot mask value of type {schema.name} with custom replacement.")
        if isinstance(value, bool) or (schema is not None and schema.type is Type.BOOLEAN):
            raise DataError("Cannot mask value of type bool with custom replacement.")
        if isinstance(value, int):
            number = int(replacement)
            if schema is not None and schema.type in _INT_BITS:
                validate_value(schema, number, where=replacement)
            return number
        if isinstance(value, float):
            return float(replacement)
        if isinstance(value, str):
            return replacement
    except (ValueError, decimal.InvalidOperation):
        raise DataError(f"Unable to convert {replacement} (str) to number") from None
    except DataError as exc:
        if "out of range" in str(exc):
            raise DataError(f"Unable to convert {replacement} (str) to number") from None
        raise
    raise DataError(f"Cannot mask value of type {type(value).__name__} with custom replacement.")


class MaskField(Configured, Transformation[ConnectRecord]):
    """Mask the listed fields."""

    _CONFIG = (
        ConfigDef()
        .define(
            FIELDS_CONFIG,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Names of fields to mask.",
        )
        .define(
            REPLACEMENT_CONFIG,
            ConfigType.STRING,
            None,
            non_empty_string,
            Importance.LOW,
            "Custom value replacement, that will be applied to all 'fields' values "
            "(numeric or non-empty string values only).",
        )
    )

    def __init__(self) -> None:
        self._fields: frozenset[str] = frozenset()
        self._replacement: str | None = None

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._fields = frozenset(parsed[FIELDS_CONFIG])
        self._replacement = parsed[REPLACEMENT_CONFIG]

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            data = require_map(value, _PURPOSE)
            updated = dict(data)
            for name in self._fields:
                if name in data:
                    updated[name] = self._masked(data[name], None)
            return self.new_record(record, None, updated)  # type: ignore[attr-defined]
        struct: Struct = require_struct(value, _PURPOSE)
        values = list(struct.values())
        for f in schema.fields:
            if f.name in self._fields:
                current = values[f.index]
                if current is None:
                    current = f.schema.default
                values[f.index] = self._masked(current, f.schema)
        return self.new_record(record, schema, Struct.trusted(schema, values))  # type: ignore[attr-defined]

    def _masked(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        if self._replacement is not None:
            return _replace(value, self._replacement, schema)
        if schema is None:
            return _mask_schemaless(value)
        logical = is_logical(schema)
        if logical is not None:
            return _MASK_BY_LOGICAL[logical]
        if schema.type is Type.ARRAY:
            return []
        if schema.type is Type.MAP:
            return {}
        if schema.type in _MASK_BY_TYPE:
            return _MASK_BY_TYPE[schema.type]
        raise DataError(f"Cannot mask value of type: {schema.type}")


class MaskFieldKey(KeySide, MaskField):
    """MaskField$Key: mask fields of the record key."""


class MaskFieldValue(ValueSide, MaskField):
    """MaskField$Value: mask fields of the record value."""


MaskField.Key = MaskFieldKey  # type: ignore[attr-defined]
MaskField.Value = MaskFieldValue  # type: ignore[attr-defined]
