"""SetSchemaMetadata ($Key / $Value): set the name and/or version of the key or
value schema (e.g. to match a schema-registry subject's record name). Needs a
schema; a struct value is re-pointed at the renamed schema."""

from __future__ import annotations

from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    Struct,
    Transformation,
)
from connect.transforms._util import (
    KeySide,
    SchemaCache,
    SchemaCaching,
    ValueSide,
    define_replace_null,
    field_values,
    require_schema,
)

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]

SCHEMA_NAME_CONFIG = "schema.name"
SCHEMA_VERSION_CONFIG = "schema.version"


class SetSchemaMetadata(SchemaCaching, Transformation[ConnectRecord]):
    """Rename and/or re-version the schema; at least one of the two must be set."""

    _CONFIG = define_replace_null(
        ConfigDef()
        .define(
            SCHEMA_NAME_CONFIG,
            ConfigType.STRING,
            None,
            None,
            Importance.HIGH,
            "Schema name to set.",
        )
        .define(
            SCHEMA_VERSION_CONFIG,
            ConfigType.INT,
            None,
            None,
            Importance.HIGH,
            "Schema version to set.",
        )
    )

    _schemas: SchemaCache[Schema]

    def __init__(self) -> None:
        super().__init__()
        self._changes: dict[str, Any] = {}

    def _configure(self, parsed: dict[str, Any]) -> None:
        name, version = parsed[SCHEMA_NAME_CONFIG], parsed[SCHEMA_VERSION_CONFIG]
        if name is None and version is None:
            raise ConfigError(
                SCHEMA_NAME_CONFIG, None, "Neither schema name nor version configured"
            )
        self._changes = {}
        if name is not None:
            self._changes["name"] = name
        if version is not None:
            self._changes["version"] = version

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = require_schema(
            self.operating_schema(record),  # type: ignore[attr-defined]
            "updating schema metadata",
        )
        value = self.operating_value(record)  # type: ignore[attr-defined]
        updated = self._schemas.get_or_build(schema, lambda s: s.with_(**self._changes))
        if isinstance(value, Struct) and value.schema is not updated:
            value = Struct.trusted(updated, field_values(value, self._replace_null))
        return self.new_record(record, updated, value)  # type: ignore[attr-defined]


class SetSchemaMetadataKey(KeySide, SetSchemaMetadata):
    """SetSchemaMetadata$Key: the key schema."""


class SetSchemaMetadataValue(ValueSide, SetSchemaMetadata):
    """SetSchemaMetadata$Value: the value schema."""


SetSchemaMetadata.Key = SetSchemaMetadataKey  # type: ignore[attr-defined]
SetSchemaMetadata.Value = SetSchemaMetadataValue  # type: ignore[attr-defined]
