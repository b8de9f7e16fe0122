"""ReplaceField ($Key / $Value): keep, drop and rename fields.

`exclude` drops fields, `include` (when not empty) keeps only the fields it lists,
and `renames` (`old:new,...`) renames what is kept. The pre-2.6 names `blacklist` and
`whitelist` are still read, as Kafka reads them, when `exclude` / `include` are not
given. A null key or value passes through.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    require_map,
    require_struct,
    struct_schema,
)

__all__ = ["ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue"]

EXCLUDE = "exclude"
INCLUDE = "include"
RENAMES = "renames"
BLACKLIST = "blacklist"  # deprecated name of `exclude`
WHITELIST = "whitelist"  # deprecated name of `include`
_DEPRECATED = {EXCLUDE: BLACKLIST, INCLUDE: WHITELIST}
_PURPOSE = "field replacement"


def parse_renames(name: str, mappings: list[str]) -> dict[str, str]:
    """`old:new` pairs; anything else is a ConfigError on `name`."""
    out: dict[str, str] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ConfigError(name, ",".join(mappings), f"Invalid rename mapping: {mapping}")
        out[parts[0].strip()] = parts[1].strip()
    return out


def _renames_validator(name: str, value: Any) -> None:
    parse_renames(name, value or [])


_renames_validator.__doc__ = "list of colon-delimited pairs, e.g. foo:bar,abc:xyz"


def _list_key(name: str, doc: str) -> tuple[str, ConfigType, Any, None, Importance, str]:
    return (name, ConfigType.LIST, "", None, Importance.MEDIUM, doc)


class ReplaceField(SchemaCaching, Transformation[ConnectRecord]):
    """Filter or rename fields of a struct or map."""

    _CONFIG = define_replace_null(
        ConfigDef()
        .define(
            *_list_key(
                EXCLUDE, "Fields to exclude. This takes precedence over the fields to include."
            )
        )
        .define(
            *_list_key(INCLUDE, "Fields to include. If specified, only these fields will be used.")
        )
        .define(
            RENAMES,
            ConfigType.LIST,
            "",
            _renames_validator,
            Importance.MEDIUM,
            "Field rename mappings.",
        )
        .define(*_list_key(BLACKLIST, f"Deprecated. Use {EXCLUDE} instead."))
        .define(*_list_key(WHITELIST, f"Deprecated. Use {INCLUDE} instead."))
    )

    _schemas: SchemaCache[tuple[Schema, tuple[int, ...]]]

    def __init__(self) -> None:
        super().__init__()
        self._exclude: frozenset[str] = frozenset()
        self._include: frozenset[str] = frozenset()
        self._renames: dict[str, str] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        translated = dict(configs)
        for current, old in _DEPRECATED.items():  # the new name wins when both are set
            if current not in translated and old in translated:
                translated[current] = translated[old]
        super().configure(translated)

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._exclude = frozenset(parsed[EXCLUDE])
        self._include = frozenset(parsed[INCLUDE])
        self._renames = parse_renames(RENAMES, parsed[RENAMES])

    def _keep(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            renames = self._renames
            updated = {
                renames.get(k, k): v
                for k, v in require_map(value, _PURPOSE).items()
                if self._keep(k)
            }
            return self.new_record(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, _PURPOSE)
        replaced, kept = self._schemas.get_or_build(schema, self._replace)
        values = field_values(struct, self._replace_null)
        out = Struct.trusted(replaced, [values[i] for i in kept])
        return self.new_record(record, replaced, out)  # type: ignore[attr-defined]

    def _replace(self, schema: Schema) -> tuple[Schema, tuple[int, ...]]:
        """The new schema and the indexes of the input fields it keeps, in order."""
        kept = [f for f in schema.fields if self._keep(f.name)]
        fields = [(self._renames.get(f.name, f.name), f.schema) for f in kept]
        return struct_schema(schema, fields), tuple(f.index for f in kept)


class ReplaceFieldKey(KeySide, ReplaceField):
    """ReplaceField$Key: fields of the record key."""


class ReplaceFieldValue(ValueSide, ReplaceField):
    """ReplaceField$Value: fields of the record value."""


ReplaceField.Key = ReplaceFieldKey  # type: ignore[attr-defined]
ReplaceField.Value = ReplaceFieldValue  # type: ignore[attr-defined]
