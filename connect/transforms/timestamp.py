"""TimestampConverter ($Key / $Value): convert a timestamp between its forms.

The forms (`target.type`) are Kafka's: `string` (formatted with the SimpleDateFormat
pattern `format`), `unix` (an integer count of `unix.precision` units since the
epoch), and the logical types `Date` (a day), `Time` (a time of day) and `Timestamp`.
The input form is read from the schema (Timestamp/Date/Time names, string, int64) or,
without one, from the Python value (str, int, datetime/date/time). Every conversion
goes through milliseconds since the epoch in UTC, as Kafka's goes through
java.util.Date, so sub-millisecond precision is dropped and Date/Time keep only their
half of the instant.

`field` names the field to convert; empty (the default) converts the whole key or
value. A null field, key or value stays null.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any, NamedTuple

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
    one_of,
)
from connect.api import Date as DateType
from connect.api import Time as TimeType
from connect.api import Timestamp as TimestampType
from connect.transforms._dateformat import DateFormat, DateFormatError
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

__all__ = ["TimestampConverter", "TimestampConverterKey", "TimestampConverterValue"]

FIELD_CONFIG = "field"
TARGET_TYPE_CONFIG = "target.type"
FORMAT_CONFIG = "format"
UNIX_PRECISION_CONFIG = "unix.precision"
_PURPOSE = "converting timestamp formats"
_DAY_MS = 86_400_000

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
# Milliseconds per unit of each `unix.precision`, as a (multiplier, divisor) pair.
_PRECISIONS: dict[str, tuple[int, int]] = {
    "seconds": (1000, 1),
    "milliseconds": (1, 1),
    "microseconds": (1, 1000),
    "nanoseconds": (1, 1_000_000),
}


def _java_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (Java's `/` and TimeUnit conversions)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class _Translator(NamedTuple):
    """One timestamp form: its schema, and conversions to and from epoch ms."""

    schema: Callable[[bool], Schema]
    to_ms: Callable[[Any], int]
    from_ms: Callable[[int], Any]


class TimestampConverter(SchemaCaching, Transformation[ConnectRecord]):
    """Convert timestamps between string, unix, Date, Time and Timestamp."""

    _CONFIG = define_replace_null(
        ConfigDef()
        .define(
            FIELD_CONFIG,
            ConfigType.STRING,
            "",
            None,
            Importance.HIGH,
            "The field containing the timestamp, or empty if the entire value is a timestamp",
        )
        .define(
            TARGET_TYPE_CONFIG,
            ConfigType.STRING,
            validator=one_of(STRING, UNIX, DATE, TIME, TIMESTAMP, case_sensitive=True),
            importance=Importance.HIGH,
            documentation="The desired timestamp representation: string, unix, Date, Time, "
            "or Timestamp",
        )
        .define(
            FORMAT_CONFIG,
            ConfigType.STRING,
            "",
            None,
            Importance.MEDIUM,
            "A SimpleDateFormat-compatible format for the timestamp. Used to generate the "
            "output when type=string or used to parse the input if the input is a string.",
        )
        .define(
            UNIX_PRECISION_CONFIG,
            ConfigType.STRING,
            "milliseconds",
            one_of(*_PRECISIONS, case_sensitive=True),
            Importance.LOW,
            "The desired Unix precision for the timestamp: seconds, milliseconds, "
            "microseconds, or nanoseconds. Used to generate the output when type=unix or "
            "used to parse the input if the input is a Long.",
        )
    )

    _schemas: SchemaCache[tuple[Schema, int, str]]

    def __init__(self) -> None:
        super().__init__()
        self._field = ""
        self._target = TIMESTAMP
        self._format: DateFormat | None = None
        self._precision = (1, 1)
        self._translators: dict[str, _Translator] = {}

    def _configure(self, parsed: dict[str, Any]) -> None:
        self._field = parsed[FIELD_CONFIG] or ""
        self._target = parsed[TARGET_TYPE_CONFIG]
        pattern = parsed[FORMAT_CONFIG] or ""
        if pattern:
            try:
                self._format = DateFormat.compile(pattern)
            except DateFormatError as exc:
                raise ConfigError(
                    FORMAT_CONFIG,
                    pattern,
                    f"TimestampConverter requires a SimpleDateFormat-compatible pattern for "
                    f"string timestamps: {exc}",
                ) from None
        elif self._target == STRING:
            raise ConfigError(
                FORMAT_CONFIG,
                pattern,
                "TimestampConverter requires format option to be specified when using string "
                "timestamps",
            )
        else:
            self._format = None
        self._precision = _PRECISIONS[parsed[UNIX_PRECISION_CONFIG]]
        self._translators = self._build_translators()

    # ------------------------------------------------------------ the forms

    def _build_translators(self) -> dict[str, _Translator]:
        multiplier, divisor = self._precision

        def string_to_ms(value: Any) -> int:
            if self._format is None:
                raise DataError(
                    "TimestampConverter requires format option to be specified when using "
                    "string timestamps"
                )
            try:
                return self._format.parse(value)
            except DateFormatError as exc:
                raise DataError(f"Could not parse timestamp: {exc}") from None

        def ms_to_string(ms: int) -> str:
            assert self._format is not None
            return self._format.format(ms)

        def time_to_ms(value: Any) -> int:
            if isinstance(value, _dt.datetime):
                return _timestamp_ms(value) % _DAY_MS
            return TimeType.from_logical(TimeType.schema(), value)

        def date_to_ms(value: Any) -> int:
            if isinstance(value, _dt.datetime):
                return _timestamp_ms(value)
            return DateType.from_logical(DateType.schema(), value) * _DAY_MS

        return {
            STRING: _Translator(
                lambda optional: Schema(Type.STRING, optional=optional), string_to_ms, ms_to_string
            ),
            UNIX: _Translator(
                lambda optional: Schema(Type.INT64, optional=optional),
                lambda v: _java_div(int(v) * multiplier, divisor),
                lambda ms: _java_div(ms * divisor, multiplier),
            ),
            DATE: _Translator(
                lambda optional: DateType.schema(optional=optional),
                date_to_ms,
                lambda ms: DateType.to_logical(DateType.schema(), ms // _DAY_MS),
            ),
            TIME: _Translator(
                lambda optional: TimeType.schema(optional=optional),
                time_to_ms,
                lambda ms: TimeType.to_logical(TimeType.schema(), ms % _DAY_MS),
            ),
            TIMESTAMP: _Translator(
                lambda optional: TimestampType.schema(optional=optional),
                _timestamp_ms,
                lambda ms: TimestampType.to_logical(TimestampType.schema(), ms),
            ),
        }

    def _convert(self, value: Any, source: str) -> Any:
        if value is None:
            return None
        translators = self._translators
        return translators[self._target].from_ms(translators[source].to_ms(value))

    # ------------------------------------------------------------- records

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if schema is None:
            if not self._field:
                converted = (
                    self._convert(value, _schemaless_type(value)) if value is not None else None
                )
                return self.new_record(record, None, converted)  # type: ignore[attr-defined]
            if value is None:
                return record
            updated = dict(require_map(value, _PURPOSE))
            current = updated.get(self._field)
            if current is not None:
                updated[self._field] = self._convert(current, _schemaless_type(current))
            return self.new_record(record, None, updated)  # type: ignore[attr-defined]
        updated_schema, index, source = self._schemas.get_or_build(schema, self._update_schema)
        if not self._field:
            return self.new_record(record, updated_schema, self._convert(value, source))  # type: ignore[attr-defined]
        if value is None:
            return self.new_record(record, updated_schema, None)  # type: ignore[attr-defined]
        values = field_values(require_struct(value, _PURPOSE), self._replace_null)
        values[index] = self._convert(values[index], source)
        return self.new_record(record, updated_schema, Struct.trusted(updated_schema, values))  # type: ignore[attr-defined]

    def _update_schema(self, schema: Schema) -> tuple[Schema, int, str]:
        """The converted schema, the converted field's index (-1: the whole value),
        and the input form."""
        target = self._translators[self._target]
        if not self._field:
            return target.schema(schema.optional), -1, _schema_type(schema)
        if schema.type is not Type.STRUCT:
            raise DataError(f"Only Struct objects supported for [{_PURPOSE}], found: {schema.type}")
        field = schema.field(self._field)
        if field is None:
            raise DataError(f"Unknown field: {self._field}")
        source = _schema_type(field.schema)
        fields = [
            (f.name, target.schema(f.schema.optional) if f is field else f.schema)
            for f in schema.fields
        ]
        return struct_schema(schema, fields), field.index, source


def _timestamp_ms(value: Any) -> int:
    if not isinstance(value, _dt.datetime):
        raise DataError(f"Expected a Timestamp (datetime), found: {type(value).__name__}")
    return TimestampType.from_logical(TimestampType.schema(), value)


def _schema_type(schema: Schema) -> str:
    """The input form a schema stands for."""
    name = schema.name
    if name == TimestampType.LOGICAL_NAME:
        return TIMESTAMP
    if name == DateType.LOGICAL_NAME:
        return DATE
    if name == TimeType.LOGICAL_NAME:
        return TIME
    if schema.type is Type.STRING:
        return STRING
    if schema.type is Type.INT64:
        return UNIX
    raise DataError(f"Schema {schema!r} does not correspond to a known timestamp type format")


def _schemaless_type(value: Any) -> str:
    """The input form of a schemaless value, from its Python type."""
    if isinstance(value, _dt.datetime):
        return TIMESTAMP
    if isinstance(value, _dt.date):
        return DATE
    if isinstance(value, _dt.time):
        return TIME
    if isinstance(value, str):
        return STRING
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    raise DataError(
        f"TimestampConverter does not support {type(value).__name__} objects as timestamps"
    )


class TimestampConverterKey(KeySide, TimestampConverter):
    """TimestampConverter$Key: a timestamp in the record key."""


class TimestampConverterValue(ValueSide, TimestampConverter):
    """TimestampConverter$Value: a timestamp in the record value."""


TimestampConverter.Key = TimestampConverterKey  # type: ignore[attr-defined]
TimestampConverter.Value = TimestampConverterValue  # type: ignore[attr-defined]
