"""The Connect data model: schemas, struct values, and value validation.

A `Schema` describes a value: one of the primitive types (int8 … float64, boolean,
string, bytes) or a compound (array of one schema, map of key and value schemas,
struct of named fields), plus `optional`, `default`, `name`, `version`, `doc` and
`parameters`. A name marks a logical type (see `connect.api.logical`). Type names are
the ones Kafka's JsonConverter writes, so schema JSON carries over unchanged.

Python values per type: int (range-checked per width), float, bool, str, bytes,
list, dict, and `Struct` for structs; logical types use `decimal.Decimal`,
`datetime.date`, `datetime.time` and `datetime.datetime`.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from connect.api.errors import SchemaError

__all__ = [
    "BOOLEAN_SCHEMA",
    "BYTES_SCHEMA",
    "FLOAT32_SCHEMA",
    "FLOAT64_SCHEMA",
    "INT8_SCHEMA",
    "INT16_SCHEMA",
    "INT32_SCHEMA",
    "INT64_SCHEMA",
    "OPTIONAL_BOOLEAN_SCHEMA",
    "OPTIONAL_BYTES_SCHEMA",
    "OPTIONAL_FLOAT32_SCHEMA",
    "OPTIONAL_FLOAT64_SCHEMA",
    "OPTIONAL_INT8_SCHEMA",
    "OPTIONAL_INT16_SCHEMA",
    "OPTIONAL_INT32_SCHEMA",
    "OPTIONAL_INT64_SCHEMA",
    "OPTIONAL_STRING_SCHEMA",
    "STRING_SCHEMA",
    "Field",
    "Schema",
    "Struct",
    "Type",
    "validate_value",
]


class Type(StrEnum):
    """Schema types; the values are the names Kafka's schema JSON uses."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float"
    FLOAT64 = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True, slots=True)
class Field:
    """A named field of a struct schema, at position `index`."""

    name: str
    index: int
    schema: Schema


@dataclass(frozen=True, slots=True, eq=False)
class Schema:
    """An immutable schema. Build compound ones with `Schema.struct`, `Schema.array`
    and `Schema.map`; derive variants with `optional_()` and `with_()`."""

    type: Type
    optional: bool = False
    default: Any = None
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    key_schema: Schema | None = None
    value_schema: Schema | None = None
    fields: tuple[Field, ...] = ()

    # ------------------------------------------------------------ construction

    @staticmethod
    def struct(
        fields: Iterable[tuple[str, Schema]],
        *,
        name: str | None = None,
        optional: bool = False,
        version: int | None = None,
        doc: str | None = None,
        default: Any = None,
        parameters: Mapping[str, str] | None = None,
    ) -> Schema:
        built = tuple(Field(n, i, s) for i, (n, s) in enumerate(fields))
        names = [f.name for f in built]
        if len(names) != len(set(names)):
            raise SchemaError(f"duplicate field names in struct {name or ''}: {names}")
        return Schema(
            Type.STRUCT,
            optional=optional,
            name=name,
            version=version,
            doc=doc,
            default=default,
            parameters=dict(parameters or {}),
            fields=built,
        )

    @staticmethod
    def array(
        value_schema: Schema,
        *,
        optional: bool = False,
        name: str | None = None,
        default: Any = None,
    ) -> Schema:
        return Schema(
            Type.ARRAY, optional=optional, name=name, default=default, value_schema=value_schema
        )

    @staticmethod
    def map(
        key_schema: Schema,
        value_schema: Schema,
        *,
        optional: bool = False,
        name: str | None = None,
        default: Any = None,
    ) -> Schema:
        return Schema(
            Type.MAP,
            optional=optional,
            name=name,
            default=default,
            key_schema=key_schema,
            value_schema=value_schema,
        )

    def optional_(self) -> Schema:
        """This schema, optional."""
        return self if self.optional else replace(self, optional=True)

    def with_(self, **changes: Any) -> Schema:
        """A copy with some attributes changed (name, version, doc, default, …)."""
        return replace(self, **changes)

    # ----------------------------------------------------------------- access

    def field(self, name: str) -> Field | None:
        if self.type is not Type.STRUCT:
            raise SchemaError(f"cannot look up field {name!r} on a {self.type} schema")
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def _key(self) -> tuple:
        return (
            self.type,
            self.optional,
            _freeze(self.default),
            self.name,
            self.version,
            self.doc,
            tuple(sorted(self.parameters.items())),
            self.key_schema,
            self.value_schema,
            self.fields,
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.type, self.optional, self.name, self.version, len(self.fields)))

    def __repr__(self) -> str:
        parts = [self.type.value]
        if self.name:
            parts.append(f"name={self.name!r}")
        if self.optional:
            parts.append("optional")
        if self.fields:
            parts.append(
                "fields=[" + ", ".join(f"{f.name}:{f.schema!r}" for f in self.fields) + "]"
            )
        if self.key_schema is not None:
            parts.append(f"keys={self.key_schema!r}")
        if self.value_schema is not None:
            parts.append(f"values={self.value_schema!r}")
        return f"Schema({', '.join(parts)})"


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _primitive(t: Type) -> tuple[Schema, Schema]:
    return Schema(t), Schema(t, optional=True)


INT8_SCHEMA, OPTIONAL_INT8_SCHEMA = _primitive(Type.INT8)
INT16_SCHEMA, OPTIONAL_INT16_SCHEMA = _primitive(Type.INT16)
INT32_SCHEMA, OPTIONAL_INT32_SCHEMA = _primitive(Type.INT32)
INT64_SCHEMA, OPTIONAL_INT64_SCHEMA = _primitive(Type.INT64)
FLOAT32_SCHEMA, OPTIONAL_FLOAT32_SCHEMA = _primitive(Type.FLOAT32)
FLOAT64_SCHEMA, OPTIONAL_FLOAT64_SCHEMA = _primitive(Type.FLOAT64)
BOOLEAN_SCHEMA, OPTIONAL_BOOLEAN_SCHEMA = _primitive(Type.BOOLEAN)
STRING_SCHEMA, OPTIONAL_STRING_SCHEMA = _primitive(Type.STRING)
BYTES_SCHEMA, OPTIONAL_BYTES_SCHEMA = _primitive(Type.BYTES)


class Struct:
    """A value of a struct schema. `put` validates against the field's schema;
    `get` returns the field's default when unset; `validate` checks that every
    required field has a value.

    Two doors for code that handles many structs (converters, transforms, sinks),
    where a method call and a validation per field would cost more than the work:
    `Struct.trusted(schema, values)` builds one from values already known to fit, and
    `struct.values()` reads all of its values at once. Both hand over the list itself,
    not a copy. Plugins use these, never the private slot behind them."""

    __slots__ = ("_values", "schema")

    @staticmethod
    def trusted(schema: Schema, values: list[Any], /) -> Struct:
        """A Struct of struct `schema` over `values`, one per field in field order,
        WITHOUT validating them: neither the schema's type, the number of values nor
        any value is checked, and the list is kept, not copied.

        Why: a decoder or transform that produced each value for its field's type (or
        copied it from a valid struct) would only pay a second time for `put`'s
        checks, per field of every record. Values that did not come from such code go
        through `Struct(schema, {...})` or `put`, which check them. The caller gives
        up the list: changing it afterwards changes the struct."""
        struct = _new_object(Struct)
        struct.schema = schema
        struct._values = values
        return struct

    def values(self) -> list[Any]:
        """The field values in field order, an unset field as None (its default not
        applied: see `get`). This is the struct's own list, not a copy, so reading
        every field costs one call; treat it as read-only (copy it to change values,
        then build a new struct with `Struct.trusted`)."""
        return self._values

    def __init__(self, schema: Schema, values: Mapping[str, Any] | None = None) -> None:
        if schema.type is not Type.STRUCT:
            raise SchemaError(f"a Struct needs a struct schema, not {schema.type}")
        self.schema = schema
        self._values: list[Any] = [None] * len(schema.fields)
        if values:
            for name, value in values.items():
                self.put(name, value)

    def _field(self, name: str) -> Field:
        f = self.schema.field(name)
        if f is None:
            raise SchemaError(f"{name!r} is not a field of {self.schema!r}")
        return f

    def put(self, name: str, value: Any) -> Struct:
        f = self._field(name)
        validate_value(f.schema, value, where=name)
        self._values[f.index] = value
        return self

    def get(self, name: str) -> Any:
        f = self._field(name)
        value = self._values[f.index]
        return f.schema.default if value is None else value

    def get_without_default(self, name: str) -> Any:
        return self._values[self._field(name).index]

    __getitem__ = get

    def __setitem__(self, name: str, value: Any) -> None:
        self.put(name, value)

    def validate(self) -> None:
        for f in self.schema.fields:
            validate_value(f.schema, self._values[f.index], where=f.name)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values (nested structs become dicts)."""
        return {f.name: _plain(self._values[f.index]) for f in self.schema.fields}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self.schema == other.schema and self._values == other._values

    def __hash__(self) -> int:
        return hash(self.schema)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={self._values[f.index]!r}" for f in self.schema.fields)
        return f"Struct{{{inner}}}"


_new_object = object.__new__


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_LOGICAL_PYTHON = {
    "org.apache.kafka.connect.data.Decimal": (_decimal.Decimal,),
    "org.apache.kafka.connect.data.Date": (_dt.date,),
    "org.apache.kafka.connect.data.Time": (_dt.time,),
    "org.apache.kafka.connect.data.Timestamp": (_dt.datetime,),
}


def validate_value(schema: Schema, value: Any, *, where: str = "value") -> None:
    """Raise SchemaError unless `value` fits `schema` (recursively)."""
    if value is None:
        if schema.optional or schema.default is not None:
            return
        raise SchemaError(f"{where}: a null value for a required {schema.type} schema")
    logical = _LOGICAL_PYTHON.get(schema.name or "")
    if logical is not None:
        if not isinstance(value, logical):
            raise SchemaError(
                f"{where}: {schema.name} expects {logical[0].__name__}, got {type(value).__name__}"
            )
        if logical[0] is _dt.date and isinstance(value, _dt.datetime):
            raise SchemaError(f"{where}: {schema.name} expects a date, got a datetime")
        return
    t = schema.type
    if t in _INT_RANGES:
        if not isinstance(value, int) or isinstance(value, bool):
            raise SchemaError(f"{where}: {t} expects an int, got {type(value).__name__}")
        low, high = _INT_RANGES[t]
        if not low <= value <= high:
            raise SchemaError(f"{where}: {value} is out of range for {t}")
    elif t in (Type.FLOAT32, Type.FLOAT64):
        if not isinstance(value, (float, int)) or isinstance(value, bool):
            raise SchemaError(f"{where}: {t} expects a float, got {type(value).__name__}")
    elif t is Type.BOOLEAN:
        if not isinstance(value, bool):
            raise SchemaError(f"{where}: boolean expects a bool, got {type(value).__name__}")
    elif t is Type.STRING:
        if not isinstance(value, str):
            raise SchemaError(f"{where}: string expects a str, got {type(value).__name__}")
    elif t is Type.BYTES:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise SchemaError(f"{where}: bytes expects bytes, got {type(value).__name__}")
    elif t is Type.ARRAY:
        if not isinstance(value, (list, tuple)):
            raise SchemaError(f"{where}: array expects a list, got {type(value).__name__}")
        assert schema.value_schema is not None
        for i, item in enumerate(value):
            validate_value(schema.value_schema, item, where=f"{where}[{i}]")
    elif t is Type.MAP:
        if not isinstance(value, Mapping):
            raise SchemaError(f"{where}: map expects a dict, got {type(value).__name__}")
        assert schema.key_schema is not None and schema.value_schema is not None
        for k, v in value.items():
            validate_value(schema.key_schema, k, where=f"{where} key")
            validate_value(schema.value_schema, v, where=f"{where}[{k!r}]")
    elif t is Type.STRUCT:
        if not isinstance(value, Struct):
            raise SchemaError(f"{where}: struct expects a Struct, got {type(value).__name__}")
        if value.schema != schema:
            raise SchemaError(f"{where}: struct schema mismatch: {value.schema!r} vs {schema!r}")
