"""HoistField ($Key / $Value): wrap the key or value in a one-field struct (with a
schema) or map (without), under the name `field`. The wrapping schema is built once
per input schema."""

from __future__ import annotations

from typing import Any

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    Struct,
    Transformation,
)
from connect.transforms._util import KeySide, SchemaCache, SchemaCaching, ValueSide

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]

FIELD_CONFIG = "field"


class HoistField(SchemaCaching, Transformation[ConnectRecord]):
    """Wrap the data in a Struct (when a schema is present) or a map."""

    _CONFIG = ConfigDef().define(
        FIELD_CONFIG,
        ConfigType.STRING,
        importance=Importance.MEDIUM,
        documentation="Field name for the single field that will be created in the "
        "resulting Struct or Map.",
    )

    _schemas: SchemaCache[Schema]

    def __init__(self) -> None:
        super().__init__()
        self._field = ""

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._field = parsed[FIELD_CONFIG]

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if schema is None:
            return self.new_record(record, None, {self._field: value})  # type: ignore[attr-defined]
        hoisted = self._schemas.get_or_build(schema, self._hoist)
        if value is None:  # a null needs the check a valid value can skip
            struct = Struct(hoisted, {self._field: None})
        else:
            struct = Struct.trusted(hoisted, [value])
        return self.new_record(record, hoisted, struct)  # type: ignore[attr-defined]

    def _hoist(self, schema: Schema) -> Schema:
        return Schema.struct([(self._field, schema)])


class HoistFieldKey(KeySide, HoistField):
    """HoistField$Key: wrap the record key."""


class HoistFieldValue(ValueSide, HoistField):
    """HoistField$Value: wrap the record value."""


HoistField.Key = HoistFieldKey  # type: ignore[attr-defined]
HoistField.Value = HoistFieldValue  # type: ignore[attr-defined]
