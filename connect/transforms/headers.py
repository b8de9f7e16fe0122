"""Header transforms: DropHeaders, InsertHeader, and HeaderFrom ($Key / $Value),
which copies or moves fields of the key or value into headers."""

from __future__ import annotations

from typing import Any

from connect.api import (
    BOOLEAN_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    ConfigDef,
    ConfigError,
    ConfigType,
    ConnectRecord,
    DataError,
    Headers,
    Importance,
    Schema,
    Struct,
    Transformation,
    one_of,
)
from connect.transforms._util import (
    Configured,
    KeySide,
    SchemaCache,
    SchemaCaching,
    ValueSide,
    define_replace_null,
    field_values,
    non_empty_list,
    require_map,
    require_struct,
    struct_schema,
)

__all__ = ["DropHeaders", "HeaderFrom", "HeaderFromKey", "HeaderFromValue", "InsertHeader"]

HEADERS_CONFIG = "headers"
HEADER_CONFIG = "header"
VALUE_LITERAL_CONFIG = "value.literal"
FIELDS_CONFIG = "fields"
OPERATION_CONFIG = "operation"


class DropHeaders(Configured, Transformation[ConnectRecord]):
    """Remove every header whose name is in `headers`."""

    _CONFIG = ConfigDef().define(
        HEADERS_CONFIG,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="The name of the headers to be removed.",
    )

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._names = frozenset(parsed[HEADERS_CONFIG])

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        names = self._names
        if not any(h.key in names for h in record.headers):
            return record
        kept = Headers(h for h in record.headers if h.key not in names)
        return record.new_record(headers=kept)  # type: ignore[attr-defined]


def parse_literal(text: str) -> tuple[Schema, Any]:
    """A header value from a config literal, typed the way Kafka's `Values.parseString`
    types simple literals: true/false → boolean, an integer → the narrowest integer
    type that holds it, a decimal number → float64, anything else → string."""
    stripped = text.strip()
    if stripped.lower() in ("true", "false"):
        return BOOLEAN_SCHEMA, stripped.lower() == "true"
    try:
        number = int(stripped)
    except ValueError:
        pass
    else:
        for schema, bits in (
            (INT8_SCHEMA, 8),
            (INT16_SCHEMA, 16),
            (INT32_SCHEMA, 32),
            (INT64_SCHEMA, 64),
        ):
            if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
                return schema, number
        return STRING_SCHEMA, text
    if any(c.isdigit() for c in stripped) and stripped.lower() not in ("nan", "infinity"):
        try:
            return FLOAT64_SCHEMA, float(stripped)
        except ValueError:
            pass
    return STRING_SCHEMA, text


class InsertHeader(Configured, Transformation[ConnectRecord]):
    """Add a header `header` whose value is the literal `value.literal`."""

    _CONFIG = (
        ConfigDef()
        .define(
            HEADER_CONFIG,
            ConfigType.STRING,
            importance=Importance.HIGH,
            documentation="The name of the header.",
        )
        .define(
            VALUE_LITERAL_CONFIG,
            ConfigType.STRING,
            importance=Importance.HIGH,
            documentation="The literal value that is to be set as the header value on all records.",
        )
    )

    def __init__(self) -> None:
        self._header = ""
        self._schema: Schema = STRING_SCHEMA
        self._value: Any = None

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._header = parsed[HEADER_CONFIG]
        if self._header is None:
            raise ConfigError(HEADER_CONFIG, None, "a header name is required")
        if parsed[VALUE_LITERAL_CONFIG] is None:
            raise ConfigError(VALUE_LITERAL_CONFIG, None, "a value is required")
        self._schema, self._value = parse_literal(parsed[VALUE_LITERAL_CONFIG])

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        headers = record.headers.copy()
        headers.add(self._header, self._value, self._schema)
        return record.new_record(headers=headers)  # type: ignore[attr-defined]


class HeaderFrom(SchemaCaching, Transformation[ConnectRecord]):
    """Copy (`operation=copy`) or move (`operation=move`) the fields `fields` of the
    key or value into the headers named by `headers`, pairwise. Moving also removes
    the fields, from the schema too. The header takes the field's schema."""

    _CONFIG = define_replace_null(
        ConfigDef()
        .define(
            FIELDS_CONFIG,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Field names in the record whose values are to be copied or "
            "moved to headers.",
        )
        .define(
            HEADERS_CONFIG,
            ConfigType.LIST,
            validator=non_empty_list,
            importance=Importance.HIGH,
            documentation="Header names, in the same order as the field names listed in "
            "the fields configuration property.",
        )
        .define(
            OPERATION_CONFIG,
            ConfigType.STRING,
            validator=one_of("move", "copy", case_sensitive=True),
            importance=Importance.HIGH,
            documentation="Either move if the fields are to be moved to the headers "
            "(removed from the key/value), or copy if the fields are to be copied to the "
            "headers (retained in the key/value).",
        )
    )

    _schemas: SchemaCache[Schema]

    def __init__(self) -> None:
        super().__init__()
        self._pairs: tuple[tuple[str, str], ...] = ()
        self._fields: frozenset[str] = frozenset()
        self._move = False

    def _configure(self, parsed: dict[str, Any]) -> None:
        fields, headers = parsed[FIELDS_CONFIG], parsed[HEADERS_CONFIG]
        if len(fields) != len(headers):
            raise ConfigError(
                HEADERS_CONFIG,
                ",".join(headers),
                f"'{FIELDS_CONFIG}' config must have the same number of elements as "
                f"'{HEADERS_CONFIG}' config.",
            )
        self._pairs = tuple(zip(fields, headers, strict=True))
        self._fields = frozenset(fields)
        self._move = parsed[OPERATION_CONFIG] == "move"

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        headers = record.headers.copy()
        if schema is None:
            data = require_map(value, "header " + self._operation_name())
            for field, header in self._pairs:
                headers.add(header, data.get(field), None)
            if self._move:
                data = {k: v for k, v in data.items() if k not in self._fields}
            return self._with_headers(record, schema, data, headers)
        struct = require_struct(value, "header " + self._operation_name())
        values = field_values(struct, self._replace_null)
        for field, header in self._pairs:
            f = schema.field(field)
            if f is None:
                raise DataError(f"{field!r} is not a field of {schema!r}")
            headers.add(header, values[f.index], f.schema)
        if not self._move:
            return self._with_headers(record, schema, value, headers)
        moved = self._schemas.get_or_build(schema, self._moved_schema)
        kept = [values[f.index] for f in schema.fields if f.name not in self._fields]
        return self._with_headers(record, moved, Struct.trusted(moved, kept), headers)

    def _operation_name(self) -> str:
        return "move" if self._move else "copy"

    def _moved_schema(self, schema: Schema) -> Schema:
        return struct_schema(
            schema, ((f.name, f.schema) for f in schema.fields if f.name not in self._fields)
        )

    def _with_headers(
        self, record: Any, schema: Schema | None, value: Any, headers: Headers
    ) -> Any:
        if isinstance(self, KeySide):
            return record.new_record(key_schema=schema, key=value, headers=headers)
        return record.new_record(value_schema=schema, value=value, headers=headers)


class HeaderFromKey(KeySide, HeaderFrom):
    """HeaderFrom$Key: fields of the record key."""


class HeaderFromValue(ValueSide, HeaderFrom):
    """HeaderFrom$Value: fields of the record value."""


HeaderFrom.Key = HeaderFromKey  # type: ignore[attr-defined]
HeaderFrom.Value = HeaderFromValue  # type: ignore[attr-defined]
