"""Parquet objects through pyarrow, built from columns, never row by row.

A batch of Struct values becomes columns with one `map(itemgetter(i), …)` per field
over the structs' value lists (in C), and each column one `pyarrow.array` call; rows
accumulate until a row group's worth (`ROW_GROUP_ROWS`) and are written as one row
group, so memory per open object is one row group plus the upload's part buffer.
The Connect schema is kept in the file's metadata (`connect.schema`) for an exact
restore. Extensions follow Confluent: `.snappy.parquet`, `.gz.parquet`, … and
`.parquet` without compression.

Types are the runtime's one mapping (`connect.api.arrow`), and the columns are written
as files hold them (`file_batch`): Debezium's times (io.debezium.time.Date, Timestamp,
MicroTimestamp, NanoTimestamp, ZonedTimestamp, which travel as numbers and text) land
as Parquet dates and UTC timestamps, as the Spark lake writes them, so a query engine
reads a `timestamp` column as a timestamp and not as a bigint of microseconds.
Confluent's S3 sink writes them as the int64 and strings they travel as. A restore
(`read`) turns them back into what the record's schema says they travel as: the same
numbers (a NanoTimestamp floored to the µs), and a ZonedTimestamp as ISO-8601 text in
UTC with six fraction digits (its original offset and digit count are not kept).
"""

from __future__ import annotations

import datetime as dt
import io
import operator
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from connect.api import (
    DataError,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
    Type,
    arrow_type,
    file_batch,
)
from connectors.s3.formats.base import FileWriter, Format, Sink
from connectors.s3.formats.schemas import (
    METADATA_KEY,
    needs_nesting,
    schema_from_json,
    schema_to_json,
    to_struct,
)

__all__ = ["ROW_GROUP_ROWS", "ParquetFormat", "to_arrow_schema", "to_file_schema"]

ROW_GROUP_ROWS = 1 << 17
_VALUES = Struct.values
_EXTENSIONS = {"none": ".parquet", "snappy": ".snappy.parquet", "gzip": ".gz.parquet",
               "lz4": ".lz4.parquet", "zstd": ".zstd.parquet", "brotli": ".br.parquet"}


def _arrow_field(name: str, schema: Schema) -> pa.Field:
    """A top-level column: the runtime's type (nested types as `file_batch` expects
    them), nullable as the field is optional."""
    return pa.field(name, arrow_type(schema), nullable=schema.optional)


def to_arrow_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema of the columns as built from the records (before `file_batch`)."""
    if schema.type is not Type.STRUCT:
        raise DataError("ParquetFormat writes struct values (records with a struct schema)")
    return pa.schema([_arrow_field(f.name, f.schema) for f in schema.fields],
                     metadata={METADATA_KEY: schema_to_json(schema)})


def to_file_schema(schema: Schema, arrow: pa.Schema) -> pa.Schema:
    """The Arrow schema of the object: `arrow` with Debezium's times as `file_batch`
    turns them (the same schema when the records have none)."""
    empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in arrow], schema=arrow)
    return file_batch(schema, empty).schema.with_metadata(arrow.metadata)


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: _plain(v) for f, v in zip(value.schema.fields, value.values(),
                                                    strict=True)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _SinkFile(io.RawIOBase):
    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._pos = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        n = len(data)
        self._sink.write(data)
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos


class _ParquetWriter(FileWriter):
    def __init__(
        self, sink: Sink, schema: Schema, arrow: pa.Schema, file: pa.Schema, codec: str
    ) -> None:
        self._schema = schema
        self._arrow = arrow
        self._file_schema = file
        self._nested = [needs_nesting(f.schema) for f in schema.fields]
        self._file = _SinkFile(sink)
        self._writer = pq.ParquetWriter(
            self._file, file, compression=codec if codec != "none" else "NONE",
            write_statistics=True,
        )
        self._pending: list[Any] = []

    def write(self, values: Sequence[Any]) -> None:
        self._pending.extend(values)
        if len(self._pending) >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        rows, self._pending = self._pending, []
        if not rows:
            return
        # The writer keeps one schema per object (writer.py rotates or projects), so the
        # structs' value lists line up with the Arrow fields.
        try:
            lists = list(map(_VALUES, rows))
        except AttributeError:
            raise DataError("ParquetFormat writes Struct values (records with a struct "
                            "schema)") from None
        arrays = []
        for i, field in enumerate(self._arrow):
            # One column per pass (`map(itemgetter)` in C): much faster than
            # `zip(*lists)`, which builds a tuple of every row's value per column
            # (docs/performance.md).
            column = list(map(operator.itemgetter(i), lists))
            data = [_plain(v) for v in column] if self._nested[i] else column
            try:
                arrays.append(pa.array(data, type=field.type, from_pandas=False))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
                raise DataError(f"field {field.name!r}: {exc}") from None
        batch = pa.RecordBatch.from_arrays(arrays, schema=self._arrow)
        # Debezium's times as dates and timestamps (the batch itself when it has none).
        columns = file_batch(self._schema, batch).columns
        self._writer.write_table(pa.Table.from_arrays(columns, schema=self._file_schema),
                                 row_group_size=len(rows))

    def finish(self) -> None:
        self._flush()
        self._writer.close()


class ParquetFormat(Format):
    needs_schema = True

    def __init__(self, *, codec: str) -> None:
        self._codec = codec
        self._arrow: dict[int, tuple[Schema, pa.Schema, pa.Schema]] = {}

    @property
    def extension(self) -> str:
        return _EXTENSIONS[self._codec]

    def writer(self, sink: Sink, schema: Schema | None) -> FileWriter:
        if schema is None:
            raise DataError("ParquetFormat needs records with a value schema")
        cached = self._arrow.get(id(schema))
        if cached is None or cached[0] is not schema:
            arrow = to_arrow_schema(schema)
            cached = self._arrow[id(schema)] = (schema, arrow, to_file_schema(schema, arrow))
        return _ParquetWriter(sink, schema, cached[1], cached[2], self._codec)

    def read(self, data: bytes) -> tuple[Schema | None, list[Any]]:
        table = pq.read_table(pa.BufferReader(data))
        meta = (table.schema.metadata or {}).get(METADATA_KEY.encode())
        schema = schema_from_json(meta) if meta else from_arrow_schema(table.schema)
        return schema, rows_to_structs(schema, table)


def rows_to_structs(schema: Schema, table: pa.Table) -> list[Any]:
    """Structs of `schema` from a table's columns (the columns in the schema's order)."""
    columns = [_travelling(f.schema, table.column(f.name)).to_pylist() for f in schema.fields]
    nested = [i for i, f in enumerate(schema.fields) if needs_nesting(f.schema)]
    if nested:
        for i in nested:
            sub = schema.fields[i].schema
            holder = Schema.struct([("v", sub)])
            columns[i] = [to_struct(holder, {"v": v}).get("v") if v is not None else None
                          for v in columns[i]]
    # Each column was read for its field's schema: no second check per cell.
    trusted = Struct.trusted
    return [trusted(schema, list(row)) for row in zip(*columns, strict=True)]


_NANO = "io.debezium.time.NanoTimestamp"
#: The µs a timestamp[ns] can hold: Arrow's strftime goes through nanoseconds.
_NS_SAFE_US = (1 << 63) // 1000 - 1
#: ±infinity as a ZonedTimestamp lands (`connect.api.arrow`: PgJDBC's stand-ins).
_INFINITIES = {9_223_372_036_825_200_000: "infinity", -9_223_372_036_832_400_000: "-infinity"}


def _travelling(schema: Schema, column: pa.ChunkedArray | pa.Array) -> Any:
    """A column read from an object, as the records' schema says it travels: a
    Debezium time that `file_batch` wrote as a date or timestamp (an int32, int64 or
    string field whose column is temporal where the runtime's mapping is not) back
    to its number or text, in C; every other column as it is. Objects written before
    Debezium's times were turned (int64 columns) come back unchanged."""
    typ = column.type
    t = schema.type
    if t is Type.STRUCT and pa.types.is_struct(typ):
        if isinstance(column, pa.ChunkedArray):
            return pa.chunked_array(
                [_travelling(schema, c) for c in column.chunks],
                type=None if column.num_chunks else typ,
            )
        stored = [column.field(f.name) for f in schema.fields]
        children = [_travelling(f.schema, c) for f, c in zip(schema.fields, stored, strict=True)]
        if all(c is d for c, d in zip(children, stored, strict=True)):
            return column
        return pa.StructArray.from_arrays(
            children,
            names=[f.name for f in schema.fields],
            mask=column.is_null() if column.null_count else None,
        )
    if typ == arrow_type(schema):
        return column  # as the runtime maps it: Connect's own Date and Timestamp too
    if t is Type.INT32 and pa.types.is_date32(typ):
        return column.cast(pa.int32())
    if t is Type.INT64 and pa.types.is_timestamp(typ):
        numbers = column.cast(pa.int64())
        return pc.multiply(numbers, 1000) if schema.name == _NANO else numbers
    if t is Type.STRING and pa.types.is_timestamp(typ):
        return _zoned_text(column.cast(pa.timestamp("us", tz="UTC")))
    return column


def _zoned_text(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """ISO-8601 text in UTC of a timestamp[us] column; a value Arrow's strftime cannot
    reach (past year 2262, ±infinity's stand-ins) is written in Python."""
    micros = column.cast(pa.int64())
    outside = pc.greater(pc.abs(micros), _NS_SAFE_US)
    if not pc.any(outside).as_py():
        return pc.strftime(column, format="%Y-%m-%dT%H:%M:%SZ")
    return pa.array([None if v is None else _zoned_micros_text(v) for v in micros.to_pylist()],
                    pa.string())


def _zoned_micros_text(micros: int) -> str:
    known = _INFINITIES.get(micros)
    if known is not None:
        return known
    seconds, fraction = divmod(micros, 1_000_000)
    days, second = divmod(seconds, 86_400)
    # Whole 400-year cycles (146,097 days) step a year Python's date cannot hold.
    cycles, days = divmod(days + 719_162, 146_097)
    day = dt.date.fromordinal(days + 1)
    year = day.year + cycles * 400
    hours, rest = divmod(second, 3600)
    return (f"{year:04d}-{day.month:02d}-{day.day:02d}T{hours:02d}:{rest // 60:02d}:"
            f"{rest % 60:02d}.{fraction:06d}Z")


def from_arrow_schema(arrow: pa.Schema) -> Schema:
    """A Connect schema for a Parquet file written by another tool (GENERIC mode)."""
    return Schema.struct([(f.name, _from_arrow(f.type, f.nullable)) for f in arrow])


def _from_arrow(t: pa.DataType, optional: bool) -> Schema:
    simple = [(pa.types.is_int8, Type.INT8), (pa.types.is_int16, Type.INT16),
              (pa.types.is_int32, Type.INT32), (pa.types.is_int64, Type.INT64),
              (pa.types.is_unsigned_integer, Type.INT64),
              (pa.types.is_float32, Type.FLOAT32), (pa.types.is_float64, Type.FLOAT64),
              (pa.types.is_boolean, Type.BOOLEAN),
              (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), Type.STRING),
              (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), Type.BYTES)]
    for test, kind in simple:
        if test(t):
            return Schema(kind, optional=optional)
    if pa.types.is_decimal(t):
        return Decimal.schema(t.scale, optional=optional)
    if pa.types.is_date(t):
        return Date.schema(optional=optional)
    if pa.types.is_time(t):
        return Time.schema(optional=optional)
    if pa.types.is_timestamp(t):
        return Timestamp.schema(optional=optional)
    if pa.types.is_map(t):
        return Schema.map(_from_arrow(t.key_type, False), _from_arrow(t.item_type, True),
                          optional=optional)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return Schema.array(_from_arrow(t.value_type, True), optional=optional)
    if pa.types.is_struct(t):
        return Schema.struct([(f.name, _from_arrow(f.type, f.nullable)) for f in t],
                             optional=optional)
    raise DataError(f"Parquet type {t} has no Connect schema")
