"""ValueToKey: replace the key with a struct (or map) of some fields of the value,
the usual way to give keyless source records a key for compaction and partitioning.
The key schema is built once per value schema."""

from __future__ import annotations

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
)
from connect.transforms._util import (
    SchemaCache,
    SchemaCaching,
    define_replace_null,
    field_values,
    non_empty_list,
    require_map,
    require_struct,
)

__all__ = ["ValueToKey"]

FIELDS_CONFIG = "fields"
_PURPOSE = "copying fields from value to key"


class ValueToKey(SchemaCaching, Transformation[ConnectRecord]):
    """Key := the value's `fields`. A null value (a tombstone) passes through."""

    _CONFIG = define_replace_null(
        ConfigDef().define(
            FIELDS_CONFIG,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Field names on the record value to extract as the record key.",
        )
    )

    _schemas: SchemaCache[tuple[Schema, tuple[int, ...]]]

    def __init__(self) -> None:
        super().__init__()
        self._fields: tuple[str, ...] = ()

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._fields = tuple(parsed[FIELDS_CONFIG])

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = record.value
        if value is None:
            return record
        schema = record.value_schema
        if schema is None:
            data = require_map(value, _PURPOSE)
            key = {name: data.get(name) for name in self._fields}
            return record.new_record(key_schema=None, key=key)  # type: ignore[attr-defined]
        struct = require_struct(value, _PURPOSE)
        key_schema, indexes = self._schemas.get_or_build(schema, self._key_schema)
        values = field_values(struct, self._replace_null)
        key = Struct.trusted(key_schema, [values[i] for i in indexes])
        return record.new_record(key_schema=key_schema, key=key)  # type: ignore[attr-defined]

    def _key_schema(self, schema: Schema) -> tuple[Schema, tuple[int, ...]]:
        fields = []
        for name in self._fields:
            field = schema.field(name)
            if field is None:
                raise DataError(f"Field does not exist: {name}")
            fields.append(field)
        key_schema = Schema.struct([(f.name, f.schema) for f in fields])
        return key_schema, tuple(f.index for f in fields)
