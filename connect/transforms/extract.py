"""ExtractField ($Key / $Value): replace the key or value with one of its fields.

With a schema the result takes the field's schema; without one, a missing field
extracts as null. A null key or value stays null (with the field's schema)."""

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
    Type,
)
from connect.transforms._util import (
    FIELD_SYNTAX_VERSION,
    KeySide,
    SchemaCache,
    SchemaCaching,
    ValueSide,
    define_field_syntax,
    define_replace_null,
    parse_field_path,
    require_map,
    require_struct,
)

__all__ = ["ExtractField", "ExtractFieldKey", "ExtractFieldValue"]

FIELD_CONFIG = "field"
_PURPOSE = "field extraction"


class ExtractField(SchemaCaching, Transformation[ConnectRecord]):
    """Replace the key or value with its field `field` (a path under V2 syntax)."""

    _CONFIG = define_replace_null(
        define_field_syntax(
            ConfigDef().define(
                FIELD_CONFIG,
                ConfigType.STRING,
                importance=Importance.MEDIUM,
                documentation="Field name to extract.",
            )
        )
    )

    _schemas: SchemaCache[tuple[tuple[int, ...], Schema]]

    def __init__(self) -> None:
        super().__init__()
        self._path: tuple[str, ...] = ()

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._path = parse_field_path(
            FIELD_CONFIG, parsed[FIELD_CONFIG], parsed[FIELD_SYNTAX_VERSION]
        )

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if schema is None:
            if value is not None:
                for step in self._path:
                    value = require_map(value, _PURPOSE).get(step)
                    if value is None:
                        break
            return self.new_record(record, None, value)  # type: ignore[attr-defined]
        indexes, field_schema = self._schemas.get_or_build(schema, self._resolve)
        for index in indexes:
            if value is None:
                break
            struct: Struct = require_struct(value, _PURPOSE)
            value = struct.values()[index]
            if value is None and self._replace_null:
                value = struct.schema.fields[index].schema.default
        return self.new_record(record, field_schema, value)  # type: ignore[attr-defined]

    def _resolve(self, schema: Schema) -> tuple[tuple[int, ...], Schema]:
        """The field indexes along the path, and the extracted field's schema."""
        indexes = []
        current = schema
        for step in self._path:
            field = current.field(step) if current.type is Type.STRUCT else None
            if field is None:
                raise DataError(f"Unknown field: {'.'.join(self._path)}")
            indexes.append(field.index)
            current = field.schema
        return tuple(indexes), current


class ExtractFieldKey(KeySide, ExtractField):
    """ExtractField$Key: extract from the record key."""


class ExtractFieldValue(ValueSide, ExtractField):
    """ExtractField$Value: extract from the record value."""


ExtractField.Key = ExtractFieldKey  # type: ignore[attr-defined]
ExtractField.Value = ExtractFieldValue  # type: ignore[attr-defined]
