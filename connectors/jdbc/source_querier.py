"""One table (or the custom query) of a JdbcSource task: the SQL its mode needs, its
schema, and its position.

Each cycle: 1. describe the columns (reflected again every cycle, so a new column shows
up in the next records), 2. ask the database for its clock (timestamp modes: the upper
bound is `now - timestamp.delay.interval.ms`), 3. run the query for the mode from the
last position, 4. hand out its rows in batches of `batch.max.rows` across polls, each
record carrying the position after it, 5. close the result; the task polls again
after `poll.interval.ms`.

| mode                    | rows read                                               | order       |
| bulk                    | all                                                     | —           |
| incrementing            | inc > last                                              | inc         |
| timestamp               | ts > last AND ts < end                                  | ts          |
| timestamp+incrementing  | ts < end AND ((ts = last AND inc > last_inc) OR ts > last) | ts, inc  |

`ts` is the timestamp column, or the COALESCE of several. Without a stored position the
lower bound is left out (or `timestamp.initial`), so no row is skipped however old.
In `timestamp` mode rows can share a timestamp, and a restart would skip the rest of
a group whose first rows were delivered: a record's offset moves to its timestamp only
when the next row has a later one (the last row of a result always does), so a restart
re-reads a partly delivered group rather than lose it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import logging
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from connect.api import (
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    ConnectError,
    Date,
    Schema,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
)
from connectors.jdbc.dialects import Dialect, TableId, reflected_name
from connectors.jdbc.types import (
    ColumnMapping,
    column_field,
    epoch_offset,
    from_epoch_offset,
    to_utc,
)

__all__ = ["Querier"]

_log = logging.getLogger(__name__)

INCREMENTING = "incrementing"
TIMESTAMP = "timestamp"
TIMESTAMP_NANOS = "timestamp_nanos"

# PostgreSQL type OIDs of a custom query's result columns (psycopg2's description)
_PG_TYPES: dict[int, Any] = {
    16: sa.Boolean(),
    17: sa.LargeBinary(),
    20: sa.BigInteger(),
    21: sa.SmallInteger(),
    23: sa.Integer(),
    25: sa.Text(),
    114: sa.JSON(),
    700: sa.REAL(),
    701: sa.Double(),
    1042: sa.CHAR(),
    1043: sa.String(),
    1082: sa.Date(),
    1083: sa.Time(),
    1114: sa.DateTime(),
    1184: sa.DateTime(timezone=True),
    2950: sa.Uuid(as_uuid=False),
    3802: sa.JSON(),
}

#: MySQL's result type codes (PyMySQL's FIELD_TYPE) for query mode. Strings and bytes
#: share codes (only the charset tells them apart), so those are left to the values;
#: so is signedness, which the description does not carry.
_MYSQL_TYPES: dict[int, Any] = {
    1: mysql.TINYINT(),
    2: sa.SmallInteger(),
    3: sa.Integer(),
    4: mysql.FLOAT(),
    5: sa.Double(),
    7: sa.DateTime(),
    8: sa.BigInteger(),
    9: mysql.MEDIUMINT(),
    10: sa.Date(),
    11: sa.Time(),
    12: sa.DateTime(),
}
_MYSQL_DECIMALS = (0, 246)  # DECIMAL, NEWDECIMAL


def _inferred(value: Any) -> Schema:
    """The schema of a query column whose SQL type the driver does not tell."""
    if isinstance(value, bool):
        return OPTIONAL_STRING_SCHEMA
    if isinstance(value, int):
        return OPTIONAL_INT64_SCHEMA
    if isinstance(value, float):
        return OPTIONAL_FLOAT64_SCHEMA
    if isinstance(value, (bytes, bytearray, memoryview)):
        return OPTIONAL_BYTES_SCHEMA
    if isinstance(value, dt.datetime):
        return Timestamp.schema(optional=True)
    if isinstance(value, dt.date):
        return Date.schema(optional=True)
    if isinstance(value, dt.time):
        return Time.schema(optional=True)
    return OPTIONAL_STRING_SCHEMA


class Querier:
    """The state and SQL of one table or query (see the module docstring)."""

    def __init__(
        self,
        *,
        dialect: Dialect,
        mode: str,
        topic: str,
        partition: Mapping[str, str],
        table: TableId | None = None,
        query: str | None = None,
        suffix: str = "",
        incrementing: str | None = None,
        timestamps: list[str] | None = None,
        delay_ms: int = 0,
        zone: dt.tzinfo = dt.UTC,
        numeric_mapping: str = "none",
        validate_non_null: bool = True,
        initial: dt.datetime | None = None,
        offset: Mapping[str, Any] | None = None,
    ) -> None:
        self.dialect = dialect
        self.mode = mode
        self.topic = topic
        self.partition = dict(partition)
        self.table = table
        self.query = query
        self.suffix = suffix.strip()
        self.incrementing = incrementing or None
        self.timestamps = list(timestamps or [])
        self.delay = dt.timedelta(milliseconds=delay_ms)
        self.zone = zone
        self.numeric_mapping = numeric_mapping
        self.validate_non_null = validate_non_null
        self.name = str(table) if table is not None else "query"
        self.next_poll = 0.0
        self.last_ts: dt.datetime | None = initial
        self.last_inc: int | None = None
        if offset:
            self._restore(offset)
        self._conn: sa.Connection | None = None
        self._result: sa.CursorResult[Any] | None = None
        self._pending: list[Any] = []
        self._open = False
        self._names: list[str] = []
        self._fields: list[ColumnMapping | None] = []
        self._unknown: list[int] = []
        self._schema: Schema | None = None
        self._aware = False

    @property
    def uses_timestamp(self) -> bool:
        return self.mode in ("timestamp", "timestamp+incrementing")

    @property
    def uses_incrementing(self) -> bool:
        return self.mode in ("incrementing", "timestamp+incrementing")

    def _restore(self, offset: Mapping[str, Any]) -> None:
        inc = offset.get(INCREMENTING)
        ms, nanos = offset.get(TIMESTAMP), offset.get(TIMESTAMP_NANOS)
        if inc is not None:
            if not isinstance(inc, int) or isinstance(inc, bool):
                raise ConnectError(f"stored offset of {self.name} has a non-integer {inc=}")
            self.last_inc = inc
        if ms is not None:
            if not isinstance(ms, int) or not isinstance(nanos, (int, type(None))):
                raise ConnectError(f"stored offset of {self.name} has a bad timestamp {ms=}")
            self.last_ts = self.dialect.truncate(from_epoch_offset(ms, nanos))

    # -------------------------------------------------------------- describe

    def _describe(self, conn: sa.Connection) -> list[tuple[str, Any, bool, bool]]:
        """(name, SQLAlchemy type or None, nullable, autoincrement) per column."""
        if self.table is not None:
            inspector = sa.inspect(conn)
            try:
                columns = inspector.get_columns(self.table.name, schema=self.table.schema)
                pk = inspector.get_pk_constraint(self.table.name, schema=self.table.schema)
            except sa.exc.NoSuchTableError:
                raise ConnectError(f"table {self.name} does not exist (any more)") from None
            pk_columns = pk.get("constrained_columns") or []
            rowid = getattr(self.dialect, "rowid_alias", None)
            return [
                (
                    reflected_name(c["name"], conn.dialect),
                    c["type"],
                    c["nullable"] and not (rowid is not None and rowid(c, pk_columns)),
                    self.dialect.is_autoincrement(c, pk_columns),
                )
                for c in columns
            ]
        return [(name, sa_type, True, False) for name, sa_type in self._describe_query(conn)]

    def _describe_query(self, conn: sa.Connection) -> list[tuple[str, Any]]:
        assert self.query is not None
        if self.dialect.name == "sqlite":  # a temporary view has the declared types
            view = self.dialect.quote("tributary_describe")
            conn.exec_driver_sql(f"DROP VIEW IF EXISTS temp.{view}")
            conn.exec_driver_sql(f"CREATE TEMP VIEW {view} AS {self.query}")
            try:
                columns = sa.inspect(conn).get_columns("tributary_describe", schema="temp")
            finally:
                conn.exec_driver_sql(f"DROP VIEW IF EXISTS temp.{view}")
            return [
                (c["name"], None if isinstance(c["type"], sa.types.NullType) else c["type"])
                for c in columns
            ]
        result = conn.exec_driver_sql(f"SELECT * FROM ({self.query}) tributary_q WHERE 1 = 0")
        description = result.cursor.description if result.cursor is not None else []
        result.close()
        out = []
        for desc in description:
            sa_type = None
            if self.dialect.name == "postgresql":
                code, precision, scale = desc[1], desc[4], desc[5]
                sa_type = _PG_TYPES.get(code)
                if code == 1700:  # a typmod-less result (price * 2) has no precision
                    bounded = isinstance(precision, int) and 0 < precision <= 1000
                    bounded = bounded and isinstance(scale, int) and 0 <= scale <= precision
                    sa_type = sa.Numeric(precision, scale) if bounded else sa.Numeric()
            elif self.dialect.name == "mysql":  # MariaDB included
                code, precision, scale = desc[1], desc[4], desc[5]
                sa_type = _MYSQL_TYPES.get(code)
                if code in _MYSQL_DECIMALS and isinstance(scale, int) and precision:
                    sa_type = sa.Numeric(max(int(precision), scale, 1), scale)
            out.append((desc[0], sa_type))
        return out

    def _prepare(self, conn: sa.Connection) -> list[tuple[str, Any]]:
        """Map the columns to fields; check the mode's columns. Returns the typed
        columns for the statement."""
        columns = self._describe(conn)
        by_name = {name: (sa_type, nullable, auto) for name, sa_type, nullable, auto in columns}
        if self.uses_incrementing and self.incrementing is None:
            auto = [name for name, _t, _n, is_auto in columns if is_auto]
            if not auto:
                raise ConnectError(
                    f"no autoincrement column in {self.name} for mode {self.mode}: "
                    "set incrementing.column.name"
                )
            self.incrementing = auto[0]
        needed = ([self.incrementing] if self.uses_incrementing else []) + (
            self.timestamps if self.uses_timestamp else []
        )
        missing = [c for c in needed if c not in by_name]
        if missing:
            raise ConnectError(
                f"column(s) {', '.join(missing)} not found in {self.name} "
                f"(it has {', '.join(by_name)})"
            )
        if self.validate_non_null and self.table is not None:
            if self.uses_incrementing and by_name[self.incrementing][1]:  # type: ignore[index]
                raise ConnectError(
                    f"incrementing column {self.incrementing} of {self.name} is nullable; "
                    "rows with NULL there would never be read (or set validate.non.null=false)"
                )
            if self.uses_timestamp and all(by_name[c][1] for c in self.timestamps):
                raise ConnectError(
                    f"timestamp column(s) {', '.join(self.timestamps)} of {self.name} are "
                    "all nullable; rows with NULL there would never be read "
                    "(or set validate.non.null=false)"
                )
        if self.uses_timestamp:
            self._aware = bool(getattr(by_name[self.timestamps[0]][0], "timezone", False))
        fields: list[ColumnMapping | None] = []
        typed: list[tuple[str, Any]] = []
        self._unknown = []
        for name, sa_type, nullable, _auto in columns:
            mapping = None
            if sa_type is not None:
                mapping = column_field(
                    name,
                    sa_type,
                    optional=nullable,
                    integer_bits=self.dialect.integer_bits,
                    real_is_double=self.dialect.real_is_double,
                    numeric_mapping=self.numeric_mapping,
                    zone=self.zone,
                )
                if mapping is None and self.table is not None:
                    _log.warning(
                        "JdbcSource: column %s of %s has type %s, which has no Connect "
                        "type; it is left out",
                        name,
                        self.name,
                        sa_type,
                    )
                    continue
            elif self.table is not None:
                _log.warning("JdbcSource: column %s of %s has no type; left out", name, self.name)
                continue
            if mapping is None:
                self._unknown.append(len(fields))
            fields.append(mapping)
            typed.append((name, sa_type))
        if not fields:
            raise ConnectError(f"{self.name} has no column of a supported type")
        self._fields = fields
        self._schema = None if self._unknown else self._struct_schema()
        return typed

    def _struct_schema(self) -> Schema:
        return Schema.struct(
            [(f.name, f.schema) for f in self._fields if f is not None],
            name=self.table.name if self.table is not None else None,
        )

    # ------------------------------------------------------------------- SQL

    def _ts_expr(self) -> str:
        quoted = [self.dialect.quote(c) for c in self.timestamps]
        expr = quoted[0] if len(quoted) == 1 else f"COALESCE({', '.join(quoted)})"
        return self.dialect.timestamp_sql(expr)

    def _statement(
        self, typed: list[tuple[str, Any]], end: dt.datetime | None
    ) -> tuple[sa.TextClause, dict[str, Any]]:
        columns = ", ".join(self.dialect.quote(name) for name, _t in typed)
        if self.table is not None:
            sql = f"SELECT {columns} FROM {self.dialect.table(self.table)}"
        elif self.mode == "bulk":
            sql = self.query or ""
        else:
            sql = f"SELECT {columns} FROM ({self.query}) tributary_q"
        params: dict[str, Any] = {}
        where: list[str] = []
        order: list[str] = []
        bind = self.dialect.bind_timestamp
        if self.uses_timestamp:
            ts = self._ts_expr()
            assert end is not None
            where.append(f"{ts} < :end")
            params["end"] = bind(end, aware=self._aware, zone=self.zone)
            order.append(ts)
        if self.uses_incrementing:
            inc = self.dialect.quote(self.incrementing or "")
            order.append(inc)
        if self.mode == "incrementing" and self.last_inc is not None:
            where.append(f"{inc} > :inc")
            params["inc"] = self.last_inc
        elif self.mode == "timestamp" and self.last_ts is not None:
            where.append(f"{ts} > :ts")
            params["ts"] = bind(self.last_ts, aware=self._aware, zone=self.zone)
        elif self.mode == "timestamp+incrementing" and self.last_ts is not None:
            params["ts"] = bind(self.last_ts, aware=self._aware, zone=self.zone)
            if self.last_inc is None:
                where.append(f"{ts} >= :ts")
            else:
                where.append(f"(({ts} = :ts AND {inc} > :inc) OR {ts} > :ts)")
                params["inc"] = self.last_inc
        if where:
            sql += " WHERE " + " AND ".join(where)
        if order:
            sql += " ORDER BY " + ", ".join(f"{o} ASC" for o in order)
        if self.suffix:
            sql += " " + self.suffix
        statement = sa.text(sql).columns(
            *(sa.column(name, t) if t is not None else sa.column(name) for name, t in typed)
        )
        return statement, params

    # ------------------------------------------------------------------ read

    @property
    def active(self) -> bool:
        """Whether a cycle is under way (more batches of it to come)."""
        return self._open

    def _begin(self, engine: sa.Engine, batch_max_rows: int) -> None:
        conn = engine.connect()
        try:
            typed = self._prepare(conn)
            end = (self.dialect.now(conn, self.zone) - self.delay) if self.uses_timestamp else None
            statement, params = self._statement(typed, end)
            self._result = conn.execution_options(
                stream_results=True, max_row_buffer=max(batch_max_rows, 1) + 1
            ).execute(statement, params)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._pending = []
        self._open = True

    def read(self, engine: sa.Engine, batch_max_rows: int) -> list[SourceRecord]:
        """The next batch of records; starts a new cycle when none is under way.
        `active` is False after the last batch of the cycle."""
        if not self._open:
            self._begin(engine, batch_max_rows)
        want = batch_max_rows + 1  # one row of lookahead, for timestamp ties
        while self._result is not None and len(self._pending) < want:
            rows = self._result.fetchmany(want - len(self._pending))
            if not rows:
                self._release()
                break
            self._pending.extend(rows)
        rows, self._pending = self._pending[:batch_max_rows], self._pending[batch_max_rows:]
        lookahead = self._pending[0] if self._pending else None
        if self._result is None and not self._pending:
            self._open = False
        return self._records(rows, lookahead)

    def _release(self) -> None:
        result, self._result = self._result, None
        conn, self._conn = self._conn, None
        try:
            if result is not None:
                result.close()
        finally:
            if conn is not None:
                conn.close()

    def close(self) -> None:
        """Drop the cycle under way (after an error, or at stop); the next one starts
        from the position of the last record handed out."""
        self._open = False
        self._pending = []
        with contextlib.suppress(sa.exc.SQLAlchemyError):  # the connection may be broken
            self._release()

    def _values(self, row: Any) -> list[Any]:
        return [
            None if value is None or f is None else f.convert(value)
            for f, value in zip(self._fields, row, strict=True)
        ]

    def _infer(self, rows: list[Any]) -> None:
        """Fix the schema of query columns of unknown type from the first rows."""
        for index in self._unknown:
            sample = next((r[index] for r in rows if r[index] is not None), None)
            schema = _inferred(sample)
            convert = (
                (lambda v, zone=self.zone: to_utc(v, zone))
                if schema.name == Timestamp.LOGICAL_NAME
                else (lambda v: v)
                if schema.type.value != "string"
                else str
            )
            self._fields[index] = ColumnMapping(self._names[index], schema, convert)
        self._unknown = []
        self._schema = self._struct_schema()

    def _records(self, rows: list[Any], lookahead: Any) -> list[SourceRecord]:
        if not rows:
            return []
        self._names = list(rows[0]._fields)
        if self._unknown:
            self._infer(rows)
        schema = self._schema
        assert schema is not None
        names = [f.name if f is not None else None for f in self._fields]
        inc_index = names.index(self.incrementing) if self.uses_incrementing else -1
        ts_indexes = [names.index(c) for c in self.timestamps] if self.uses_timestamp else []
        values_list = [self._values(row) for row in rows]
        next_ts = None
        if self.mode == "timestamp" and lookahead is not None:
            next_ts = self._row_ts(self._values(lookahead), ts_indexes)
        out: list[SourceRecord] = []
        for i, values in enumerate(values_list):
            struct = Struct(
                schema, {n: v for n, v in zip(names, values, strict=True) if n is not None}
            )
            offset: dict[str, Any] | None = None
            if self.mode != "bulk":
                if ts_indexes:
                    ts = self._row_ts(values, ts_indexes)
                    if self.mode == "timestamp":
                        following = (
                            self._row_ts(values_list[i + 1], ts_indexes)
                            if i + 1 < len(values_list)
                            else next_ts
                        )
                        if following is None or following != ts:  # the group ends here
                            self.last_ts = ts
                    else:
                        self.last_ts = ts
                if inc_index >= 0:
                    self.last_inc = self._row_inc(values[inc_index])
                offset = self.offset()
            out.append(
                SourceRecord(
                    topic=self.topic,
                    value_schema=schema,
                    value=struct,
                    source_partition=self.partition,
                    source_offset=offset,
                )
            )
        return out

    def offset(self) -> dict[str, Any]:
        """The position after the last record handed out, in Confluent's fields."""
        out: dict[str, Any] = {}
        if self.last_inc is not None and self.uses_incrementing:
            out[INCREMENTING] = self.last_inc
        if self.last_ts is not None and self.uses_timestamp:
            out[TIMESTAMP], out[TIMESTAMP_NANOS] = epoch_offset(self.last_ts)
        return out

    def _row_ts(self, values: list[Any], indexes: list[int]) -> dt.datetime | None:
        for index in indexes:  # COALESCE: the first non-null column
            value = values[index]
            if value is None:
                continue
            if isinstance(value, str):
                value = dt.datetime.fromisoformat(value)
            if isinstance(value, dt.datetime):
                return self.dialect.truncate(to_utc(value, self.zone))
            raise ConnectError(
                f"timestamp column {self.timestamps[indexes.index(index)]} of {self.name} "
                f"holds {type(value).__name__} values, not timestamps"
            )
        return None

    def _row_inc(self, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, decimal.Decimal) and value == value.to_integral_value():
            return int(value)
        raise ConnectError(
            f"incrementing column {self.incrementing} of {self.name} holds {value!r}, "
            "not an integer"
        )
