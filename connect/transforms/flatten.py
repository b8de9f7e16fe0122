"""Flatten ($Key / $Value): turn nested structs (or maps) into one level, joining
the names along the path with `delimiter` (`a.b.c`).

With a schema, a field under an optional struct becomes optional (the parent may be
null, and then so is every field flattened out of it); arrays and maps are kept as
they are. Without a schema, nested maps are flattened and every other value is kept.
The flat schema, and where each flat field's value comes from, is worked out once per
input schema, so flattening a record is a walk over a list of paths.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    KeySide,
    SchemaCache,
    SchemaCaching,
    ValueSide,
    require_map,
    require_struct,
    struct_schema,
)

__all__ = ["Flatten", "FlattenKey", "FlattenValue"]

DELIMITER_CONFIG = "delimiter"
_PURPOSE = "flattening"

# A flat field's source: the field indexes to follow from the top-level struct.
_Path = tuple[int, ...]


class Flatten(SchemaCaching, Transformation[ConnectRecord]):
    """Flatten nested structs or maps into a single level."""

    _CONFIG = ConfigDef().define(
        DELIMITER_CONFIG,
        ConfigType.STRING,
        ".",
        None,
        Importance.MEDIUM,
        "Delimiter to insert between field names from the input record when generating "
        "field names for the output record",
    )

    _schemas: SchemaCache[tuple[Schema, tuple[_Path, ...]]]

    def __init__(self) -> None:
        super().__init__()
        self._delimiter = "."

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._delimiter = parsed[DELIMITER_CONFIG]

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, _PURPOSE), "", flat)
            return self.new_record(record, None, flat)  # type: ignore[attr-defined]
        struct = require_struct(value, _PURPOSE)
        flat_schema, paths = self._schemas.get_or_build(schema, self._flatten_schema)
        values = []
        for path in paths:
            current: Any = struct
            for index in path:
                if current is None:
                    break
                container: Struct = current
                current = container.values()[index]
                if current is None:
                    current = container.schema.fields[index].schema.default
            values.append(current)
        return self.new_record(record, flat_schema, Struct.trusted(flat_schema, values))  # type: ignore[attr-defined]

    def _flatten_map(self, data: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, value in data.items():
            if not isinstance(key, str):
                raise DataError(
                    f"Flatten only supports maps with string keys, found: {type(key).__name__}"
                )
            name = prefix + key
            if isinstance(value, Mapping):
                self._flatten_map(value, name + self._delimiter, out)
            else:
                out[name] = value

    def _flatten_schema(self, schema: Schema) -> tuple[Schema, tuple[_Path, ...]]:
        fields: list[tuple[str, Schema]] = []
        paths: list[_Path] = []
        self._collect(schema, "", (), False, fields, paths)
        names = [name for name, _ in fields]
        if len(set(names)) != len(names):
            raise DataError(f"Flattening {schema!r} gives duplicate field names: {names}")
        return struct_schema(schema, fields), tuple(paths)

    def _collect(
        self,
        schema: Schema,
        prefix: str,
        path: _Path,
        optional: bool,
        fields: list[tuple[str, Schema]],
        paths: list[_Path],
    ) -> None:
        for field in schema.fields:
            name = prefix + field.name
            where = (*path, field.index)
            child = field.schema
            if child.type is Type.STRUCT:
                nested_optional = optional or child.optional
                self._collect(child, name + self._delimiter, where, nested_optional, fields, paths)
            else:
                if optional and not child.optional:
                    child = child.optional_()
                fields.append((name, child))
                paths.append(where)


class FlattenKey(KeySide, Flatten):
    """Flatten$Key: flatten the record key."""


class FlattenValue(ValueSide, Flatten):
    """Flatten$Value: flatten the record value."""


Flatten.Key = FlattenKey  # type: ignore[attr-defined]
Flatten.Value = FlattenValue  # type: ignore[attr-defined]
