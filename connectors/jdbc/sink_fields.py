"""What the JDBC sink writes: from a record's key and value to a table's columns.

A `FieldsPlan` is built once per (key schema, value schema) — or, for a schemaless
value (a dict), per set of dict keys — and says which columns form the primary key,
which carry values, the Connect schema of each (for CREATE/ALTER TABLE) and how to pull
a row out of a record. Primary-key columns come first, in `pk.fields` order:

| pk.mode      | key columns                                            |
| none         | none                                                   |
| kafka        | topic, partition, offset (default `__connect_*` names) |
| record_key   | the key struct's fields (or `pk.fields` of them); for a primitive key, |
|              | the one column `pk.fields` names                       |
| record_value | the value's fields (or `pk.fields` of them)            |

The other columns are the value's fields not in the key, filtered by `fields.whitelist`.
Only primitive and logical fields map to columns: a struct or map field is a DataError
naming it (flatten such values with a transform first). An array of a primitive or
logical type maps to PostgreSQL's array of the element's type (`integer[]`, `text[]`,
`numeric[]`, `timestamp(6)[]`, `uuid[]`, …; what PostgresCdcSource emits for a
one-dimensional array column), bound as a Python list; into an existing TEXT column
(made when that source sent arrays as their text) it goes as that text, the array
literal (`connectors.jdbc.pg_arrays`). On other databases, which have no array columns,
it is the same DataError, saying that PostgreSQL targets take arrays.

`column_type(schema, dialect)` maps Connect types to SQL types: int8/int16 → SMALLINT,
int32 → INTEGER, int64 → BIGINT, float32 → REAL, float64 → DOUBLE, boolean, string →
TEXT (VARCHAR(256) for MySQL keys), bytes → binary (VARBINARY(767) for MySQL keys),
Decimal → NUMERIC with the schema's scale (exact; on SQLite, which has no exact
decimal type, the text of the decimal), Date → DATE, Time → TIME, Timestamp →
TIMESTAMP (written in `db.timezone`). Nullability follows `optional`. MySQL's TIME and
DATETIME keep no fraction of a second unless asked, so there Time → TIME(3) and
Timestamp → DATETIME(3): Connect's Time and Timestamp carry milliseconds (Confluent's
MySQL dialect does the same). MariaDB is MySQL here (`mariadb+…` URLs included).

Debezium's semantic types (`connectors.jdbc.types`; what Debezium's source connectors,
and ours for PostgreSQL, emit) map as Debezium's JDBC sink maps them, so a CDC stream
rebuilds its source table with the same values:

| Debezium type                        | PostgreSQL        | MySQL            | SQLite   |
| Date                                 | date              | DATE             | DATE     |
| Time / MicroTime, NanoTime           | time(3) / time(6) | TIME(3) / TIME(6)| TIME     |
| Timestamp / MicroTimestamp, Nano…    | timestamp(3) / (6)| DATETIME(3) / (6)| DATETIME |
| ZonedTimestamp                       | timestamptz(6)    | DATETIME(6)      | DATETIME |
| ZonedTime                            | timetz(6)         | TIME(6)          | TIME     |
| VariableScaleDecimal                 | numeric           | DECIMAL(65, 30)  | decimal text |
| Json                                 | jsonb             | JSON             | TEXT     |
| Uuid                                 | uuid              | VARCHAR(36)      | VARCHAR(36) |
| MicroDuration                        | interval          | BIGINT (µs)      | BIGINT   |
| Interval, Enum                       | text              | TEXT             | TEXT     |

Timestamps without a zone are wall-clock times and are written as they are;
ZonedTimestamp and ZonedTime are UTC instants (converted to `db.timezone` for columns
without a zone, which is how MySQL and SQLite keep them). Two deliberate differences
from Debezium's sink: a VariableScaleDecimal goes to an exact column, not a DOUBLE that
would round it; and MySQL gets DATETIME(6), not TIMESTAMP, for a ZonedTimestamp, as
MySQL's TIMESTAMP ends in 2038 and shifts with the session's zone.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.types import TypeDecorator, UserDefinedType

from connect.api import DataError, Schema, SinkRecord, Struct, Type
from connect.api import Date as DateType
from connect.api import Decimal as DecimalType
from connect.api import Time as TimeType
from connect.api import Timestamp as TimestampType
from connectors.jdbc.pg_arrays import array_literal
from connectors.jdbc.sink_config import KAFKA_PK_COLUMNS, SinkSettings
from connectors.jdbc.types import (
    DBZ_DATE,
    DBZ_ENUM,
    DBZ_INTERVAL,
    DBZ_JSON,
    DBZ_MICRO_DURATION,
    DBZ_MICRO_TIME,
    DBZ_MICRO_TIMESTAMP,
    DBZ_NANO_TIME,
    DBZ_NANO_TIMESTAMP,
    DBZ_TIME,
    DBZ_TIMESTAMP,
    DBZ_UUID,
    DBZ_VARIABLE_SCALE_DECIMAL,
    DBZ_ZONED_TIME,
    DBZ_ZONED_TIMESTAMP,
    from_debezium_date,
    from_debezium_time,
    from_debezium_timestamp,
    from_variable_scale_decimal,
    from_zoned_time,
    from_zoned_timestamp,
)

__all__ = ["Column", "FieldsPlan", "JsonText", "column_type", "plan_for", "value_converter"]

_KAFKA_SCHEMAS = (
    Schema(Type.STRING),
    Schema(Type.INT32),
    Schema(Type.INT64),
)


@dataclass(frozen=True, slots=True)
class Column:
    """One column the sink writes: its name, and the Connect schema it comes from
    (None for a schemaless value: the table's own type is used)."""

    name: str
    schema: Schema | None
    key: bool

    @property
    def nullable(self) -> bool:
        return not self.key and (self.schema is None or self.schema.optional)


@dataclass(frozen=True, slots=True, eq=False)
class FieldsPlan:
    """The columns of one record shape, and how to get a row (a tuple in column
    order: key columns first) or a key (the key columns only) out of a record."""

    columns: tuple[Column, ...]
    n_key: int
    row: Callable[[SinkRecord], tuple]
    key_row: Callable[[SinkRecord], tuple]
    # Column index → default value, for `replace.null.with.default`.
    defaults: Mapping[int, Any]

    @property
    def key_columns(self) -> tuple[Column, ...]:
        return self.columns[: self.n_key]

    @property
    def value_columns(self) -> tuple[Column, ...]:
        return self.columns[self.n_key :]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


# ------------------------------------------------------------------ type mapping


class ExactDecimal(TypeDecorator[decimal.Decimal]):
    """A decimal kept exact on databases without an exact decimal type (SQLite):
    stored as its text, read back as a Decimal."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        return None if value is None else str(value)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> decimal.Decimal | None:
        return None if value is None else decimal.Decimal(str(value))


class JsonText(UserDefinedType[str]):
    """A JSON column written as the JSON text it is given (a Debezium Json value is
    already text; SQLAlchemy's JSON type would encode it again, as a JSON string):
    jsonb on PostgreSQL, JSON on MySQL, TEXT elsewhere."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "TEXT"


@compiles(JsonText, "postgresql")
def _jsonb(element: JsonText, compiler: Any, **kw: Any) -> str:
    return "JSONB"


@compiles(JsonText, "mysql")
@compiles(JsonText, "mariadb")
def _mysql_json(element: JsonText, compiler: Any, **kw: Any) -> str:
    return "JSON"


_TIME_DIGITS = {DBZ_TIME: 3, DBZ_MICRO_TIME: 6, DBZ_NANO_TIME: 6, DBZ_ZONED_TIME: 6}
_TIMESTAMP_DIGITS = {
    DBZ_TIMESTAMP: 3,
    DBZ_MICRO_TIMESTAMP: 6,
    DBZ_NANO_TIMESTAMP: 6,
    DBZ_ZONED_TIMESTAMP: 6,
}


def _debezium_type(name: str, dialect: str, *, key: bool) -> sa.types.TypeEngine | None:
    """The SQL type for one of Debezium's semantic types (None: not one of them)."""
    if name == DBZ_DATE:
        return sa.Date()
    if name in _TIME_DIGITS:
        digits = _TIME_DIGITS[name]
        if dialect == "postgresql":
            return postgresql.TIME(timezone=name == DBZ_ZONED_TIME, precision=digits)
        return mysql.TIME(fsp=digits) if dialect == "mysql" else sa.Time()
    if name in _TIMESTAMP_DIGITS:
        digits = _TIMESTAMP_DIGITS[name]
        if dialect == "postgresql":
            return postgresql.TIMESTAMP(timezone=name == DBZ_ZONED_TIMESTAMP, precision=digits)
        return mysql.DATETIME(fsp=digits) if dialect == "mysql" else sa.DateTime()
    if name == DBZ_VARIABLE_SCALE_DECIMAL:
        if dialect == "sqlite":
            return ExactDecimal()
        if dialect == "mysql":
            return sa.Numeric(65, 30, asdecimal=True)
        return sa.Numeric(asdecimal=True)
    if name == DBZ_JSON:
        return JsonText()
    if name == DBZ_UUID:
        return sa.Uuid(as_uuid=False) if dialect == "postgresql" else sa.String(36)
    if name == DBZ_MICRO_DURATION:
        return postgresql.INTERVAL() if dialect == "postgresql" else sa.BigInteger()
    if name in (DBZ_INTERVAL, DBZ_ENUM):
        return sa.String(256) if key and dialect == "mysql" else sa.Text()
    return None


class PgArray(TypeDecorator[list]):
    """PostgreSQL's array of `item_type`, its bound parameter cast to the column's
    type: psycopg2 writes a list of strings as `ARRAY['…']`, a `text[]`, which
    PostgreSQL does not turn into a `uuid[]` or `jsonb[]` column by itself."""

    impl = postgresql.ARRAY
    cache_ok = True

    def bind_expression(self, bindvalue: Any) -> Any:
        return sa.cast(bindvalue, postgresql.ARRAY(self.impl.item_type))

    def bind_processor(self, dialect: sa.Dialect) -> Callable[[Any], Any] | None:
        """An array literal (bound for a TEXT column, see `_array_converter`) passes
        as the text it is, for the cast to read; a list goes through ARRAY's own."""
        inner = super().bind_processor(dialect)
        if inner is None:
            return None
        return lambda v: v if isinstance(v, str) else inner(v)


def _array_type(schema: Schema, dialect: str, where: str) -> sa.types.TypeEngine:
    """PostgreSQL's array of the element's type; a DataError elsewhere, or for an
    element that is itself an array, a struct or a map."""
    if dialect != "postgresql":
        raise DataError(
            f"{where}: an array field has no column type on {dialect} (PostgreSQL "
            "targets take arrays); flatten it with a transform first"
        )
    element = schema.value_schema
    if element is None or not (
        element.type.is_primitive or element.name == DBZ_VARIABLE_SCALE_DECIMAL
    ):
        kind = "untyped" if element is None else str(element.type)
        raise DataError(
            f"{where}: an array of {kind} values has no column type; flatten it "
            "with a transform first"
        )
    return PgArray(column_type(element, dialect, key=False, where=f"{where} element"))


def column_type(schema: Schema, dialect: str, *, key: bool, where: str) -> sa.types.TypeEngine:
    """The SQL type for a field of `schema` on `dialect` (see the module docstring)."""
    if dialect == "mariadb":  # SQLAlchemy's name for MySQL reached by a mariadb:// URL
        dialect = "mysql"
    if schema.type is Type.ARRAY:
        return _array_type(schema, dialect, where)
    name = schema.name
    if name is not None and name.startswith("io.debezium."):
        debezium = _debezium_type(name, dialect, key=key)
        if debezium is not None:
            return debezium
    if name == DecimalType.LOGICAL_NAME:
        scale = DecimalType.scale(schema)
        precision = schema.parameters.get("connect.decimal.precision")
        if dialect == "sqlite":
            return ExactDecimal()
        if dialect == "mysql":
            return sa.Numeric(int(precision) if precision else 65, scale, asdecimal=True)
        return sa.Numeric(int(precision) if precision else None, scale, asdecimal=True)
    if name == DateType.LOGICAL_NAME:
        return sa.Date()
    if name == TimeType.LOGICAL_NAME:
        return mysql.TIME(fsp=3) if dialect == "mysql" else sa.Time()
    if name == TimestampType.LOGICAL_NAME:
        return mysql.DATETIME(fsp=3) if dialect == "mysql" else sa.DateTime()
    t = schema.type
    if t in (Type.INT8, Type.INT16):
        return sa.SmallInteger()
    if t is Type.INT32:
        return sa.Integer()
    if t is Type.INT64:
        return sa.BigInteger()
    if t is Type.FLOAT32:
        return sa.REAL()
    if t is Type.FLOAT64:
        return sa.Double()
    if t is Type.BOOLEAN:
        return sa.Boolean()
    if t is Type.STRING:
        return sa.String(256) if key and dialect == "mysql" else sa.Text()
    if t is Type.BYTES:
        return sa.VARBINARY(767) if key and dialect == "mysql" else sa.LargeBinary()
    raise DataError(f"{where}: a {t} field has no column type; flatten it with a transform first")


# ----------------------------------------------------------------- the plans


def _getter(names: Sequence[str]) -> Callable[[Mapping[str, Any]], tuple]:
    """A C-speed `d -> tuple(d[n] for n in names)` (a tuple even for one name)."""
    if not names:
        return lambda d: ()
    if len(names) == 1:
        only = names[0]
        return lambda d: (d[only],)
    return operator.itemgetter(*names)


def _struct_fields(schema: Schema, where: str) -> dict[str, Schema]:
    if schema.type is not Type.STRUCT:
        raise DataError(f"{where} must be a struct, not {schema.type}")
    return {f.name: f.schema for f in schema.fields}


def _pick(available: Mapping[str, Any], wanted: Sequence[str], where: str) -> list[str]:
    missing = [n for n in wanted if n not in available]
    if missing:
        raise DataError(f"pk.fields {missing} are not fields of the {where} {list(available)}")
    return list(wanted)


def _as_dict(value: Any, where: str) -> Mapping[str, Any]:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, Mapping):
        return value
    raise DataError(f"the record {where} must be a struct or a map, not {type(value).__name__}")


def plan_for(settings: SinkSettings, record: SinkRecord, *, dialect: str = "default") -> FieldsPlan:
    """The plan for records shaped like `record` on `dialect` (SQLAlchemy's name: it
    decides which fields have a column type, e.g. arrays); for a tombstone (a null
    value) the key columns only, which is what a delete needs."""
    value, value_schema = record.value, record.value_schema
    if value is None:
        value_fields: dict[str, Schema | None] = {}
    elif value_schema is not None:
        value_fields = dict(_struct_fields(value_schema, "value"))
    elif isinstance(value, Mapping):
        value_fields = dict.fromkeys(value)  # schemaless: the table has the types
    else:
        raise DataError(
            "the JDBC sink needs a struct value with a schema, or a map value for an "
            f"existing table; got {type(value).__name__} without a schema "
            f"(topic {record.topic}, partition {record.kafka_partition}, "
            f"offset {record.kafka_offset})"
        )

    key_columns: list[Column] = []
    key_from_value: list[str] = []
    key_part: Callable[[SinkRecord], tuple]
    mode = settings.pk_mode
    if mode == "kafka":
        names = settings.pk_fields or KAFKA_PK_COLUMNS
        key_columns = [Column(n, s, True) for n, s in zip(names, _KAFKA_SCHEMAS, strict=True)]

        def key_part(r: SinkRecord) -> tuple:
            return (r.topic, r.kafka_partition, r.kafka_offset)

    elif mode == "record_key":
        key_columns, key_part = _record_key_part(settings, record)
    elif mode == "record_value":
        names = (
            _pick(value_fields, settings.pk_fields, "value")
            if settings.pk_fields
            else list(value_fields)
        )
        key_columns = [Column(n, value_fields[n], True) for n in names]
        key_from_value = names
    else:

        def key_part(r: SinkRecord) -> tuple:
            return ()

    taken = {c.name for c in key_columns}
    include = settings.fields_include
    value_names = [n for n in value_fields if n not in taken and (include is None or n in include)]
    value_columns = [Column(n, value_fields[n], False) for n in value_names]
    columns = tuple(key_columns + value_columns)
    for c in columns:
        if c.schema is not None:  # fail early on a field with no column type
            column_type(c.schema, dialect, key=c.key, where=f"field {c.name!r}")

    from_value = _getter(key_from_value + value_names)
    key_from_value_get = _getter(key_from_value)
    if mode == "record_value":

        def row(r: SinkRecord) -> tuple:
            return from_value(_as_dict(r.value, "value"))

        def key_row(r: SinkRecord) -> tuple:
            return key_from_value_get(_as_dict(r.value, "value"))

    else:
        values_get = _getter(value_names)

        def row(r: SinkRecord) -> tuple:
            return key_part(r) + values_get(_as_dict(r.value, "value"))

        key_row = key_part

    defaults = {
        i: c.schema.default
        for i, c in enumerate(columns)
        if settings.replace_null_with_default
        and c.schema is not None
        and c.schema.default is not None
    }
    return FieldsPlan(columns, len(key_columns), row, key_row, defaults)


def _record_key_part(
    settings: SinkSettings, record: SinkRecord
) -> tuple[list[Column], Callable[[SinkRecord], tuple]]:
    key, key_schema = record.key, record.key_schema
    where = f"({record.topic}-{record.kafka_partition}@{record.kafka_offset})"
    if key is None and key_schema is None:
        raise DataError(f"pk.mode=record_key needs a record key, and this record has none {where}")
    primitive = (
        key_schema.type.is_primitive
        if key_schema is not None
        else not isinstance(key, (Struct, Mapping))
    )
    if primitive:
        if len(settings.pk_fields) != 1:
            raise DataError(
                "pk.fields must name exactly one column for a primitive record key, "
                f"not {list(settings.pk_fields)} {where}"
            )
        columns = [Column(settings.pk_fields[0], key_schema, True)]

        def part(r: SinkRecord) -> tuple:
            return (r.key,)

        return columns, part
    if key_schema is not None:
        fields: Mapping[str, Schema | None] = _struct_fields(key_schema, "key")
    else:
        fields = dict.fromkeys(key)
    names = _pick(fields, settings.pk_fields, "key") if settings.pk_fields else list(fields)
    getter = _getter(names)

    def struct_part(r: SinkRecord) -> tuple:
        return getter(_as_dict(r.key, "key"))

    return [Column(n, fields[n], True) for n in names], struct_part


# ------------------------------------------------------------ value conversion


def value_converter(
    schema: Schema | None,
    *,
    tz: dt.tzinfo,
    column_has_tz: bool,
    column: sa.types.TypeEngine | None = None,
) -> Callable[[Any], Any] | None:
    """A per-value conversion before binding, or None when the value binds as is:
    timestamps go to `db.timezone` (naive, for columns without a time zone), byte
    views become bytes, Debezium's semantic types become the date, time, datetime,
    Decimal or timedelta their column takes."""
    if schema is None:
        return None
    if schema.type is Type.ARRAY:
        return _array_converter(schema, tz=tz, column=column)
    name = schema.name
    if name == TimestampType.LOGICAL_NAME:
        return _instant_converter(tz, column_has_tz)
    if name is not None and name.startswith("io.debezium."):
        return _debezium_converter(name, tz=tz, column_has_tz=column_has_tz, column=column)
    if schema.type is Type.BYTES and name is None:

        def to_bytes(v: Any) -> bytes:
            return v if type(v) is bytes else bytes(v)

        return to_bytes
    return None


def _instant_converter(tz: dt.tzinfo, column_has_tz: bool) -> Callable[[Any], Any]:
    """An aware (or naive UTC) datetime as the column takes it: aware for a column
    with a time zone, else the wall-clock time in `tz`."""
    if column_has_tz:

        def aware(v: dt.datetime) -> dt.datetime:
            return v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)

        return aware

    def local(v: dt.datetime) -> dt.datetime:
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.UTC)  # naive Timestamps are UTC (connect.api)
        return v.astimezone(tz).replace(tzinfo=None)

    return local


def _takes_timedelta(column: sa.types.TypeEngine | None) -> bool:
    """Whether the table's column is an interval (it binds timedeltas)."""
    try:
        return column is not None and column.python_type is dt.timedelta
    except NotImplementedError:
        return False


def _microseconds(v: int) -> dt.timedelta:
    return dt.timedelta(microseconds=v)


def _debezium_converter(
    name: str, *, tz: dt.tzinfo, column_has_tz: bool, column: sa.types.TypeEngine | None
) -> Callable[[Any], Any] | None:
    if name == DBZ_DATE:
        return from_debezium_date
    if name in (DBZ_TIME, DBZ_MICRO_TIME, DBZ_NANO_TIME):
        return functools.partial(from_debezium_time, name)
    if name in (DBZ_TIMESTAMP, DBZ_MICRO_TIMESTAMP, DBZ_NANO_TIMESTAMP):
        wall_clock = functools.partial(from_debezium_timestamp, name)
        if not column_has_tz:
            return wall_clock  # the source's wall-clock time, unchanged

        def as_utc(v: int) -> dt.datetime:
            return wall_clock(v).replace(tzinfo=dt.UTC)

        return as_utc
    if name == DBZ_ZONED_TIMESTAMP:
        instant = _instant_converter(tz, column_has_tz)

        def zoned(v: str) -> Any:
            if v in ("infinity", "-infinity"):
                return v  # PostgreSQL takes these as they are
            return instant(from_zoned_timestamp(v))

        return zoned
    if name == DBZ_ZONED_TIME:

        def zoned_time(v: str) -> dt.time:
            value = from_zoned_time(v)
            return value if column_has_tz else value.replace(tzinfo=None)  # UTC

        return zoned_time
    if name == DBZ_VARIABLE_SCALE_DECIMAL:
        return from_variable_scale_decimal
    if name == DBZ_MICRO_DURATION and _takes_timedelta(column):
        return _microseconds
    return None


def _array_converter(
    schema: Schema, *, tz: dt.tzinfo, column: sa.types.TypeEngine | None
) -> Callable[[Any], list]:
    """A Connect array as the list psycopg2 adapts (a tuple would be a row), each
    element converted as a column of the array's element type would be; NULL
    elements stay None. Into a column that is not an array (a TEXT column made when
    PostgresCdcSource sent arrays as their text) it is that text, the array literal."""
    item = getattr(column, "item_type", None)
    element = value_converter(
        schema.value_schema,
        tz=tz,
        column_has_tz=bool(getattr(item, "timezone", False)),
        column=item,
    )
    convert = element or (lambda e: e)
    if column is not None and not isinstance(column, sa.ARRAY):
        return lambda v: array_literal(convert(e) if e is not None else None for e in v)
    if element is None:
        return list

    def convert_all(v: Any) -> list:
        return [None if e is None else convert(e) for e in v]

    return convert_all
