"""The snapshot's COPY text, a chunk at a time, straight into Arrow columns.

Why: `parse_copy_text` makes a Python object per value and a list per row, a few
microseconds per row of ten columns; the runtime's columnar path
(`connect.api.batches.SourceBatch`) wants Arrow columns anyway. pyarrow's CSV reader
splits and converts COPY's text format in C (tab delimiter, no quoting, `\\N` the only
null), and the few columns whose Debezium value is not what the reader makes are
finished with Arrow compute functions — no Python call per value.

The rule: for every chunk `CopyArrowParser.parse` accepts, its columns are exactly
those `batch_from_values(table.value_schema, rows)` makes of the rows `parse_copy_text`
gives, so `to_connect` of a column equals today's values. Where it cannot promise
that, `parse` answers None and the caller parses that chunk the per-row way, which is
always correct and is also the one that raises on values with no Connect value. (The
rule is kept for the text PostgreSQL prints; the CSV reader is laxer about text it never
prints — it trims blanks around a date, which the per-row path refuses.)

How each column is read (by its schema from `connectors.postgres.columns`):

| column (schema)                                   | read as        | then                  |
| int2/4/8, oid (int16/32/64)                        | int16/32/64    |                       |
| double precision, numeric in `double` mode         | float64        |                       |
| boolean                                            | bool (t / f)   |                       |
| numeric(p, s), Connect Decimal                     | decimal128     |                       |
| date: io.debezium.time.Date / Connect Date         | date32         | days as int32 / as is |
| time: Time (ms) / MicroTime / Connect Time         | time32 / time64| as int / ms (truncated)|
| timestamp: Timestamp / MicroTimestamp / Connect    | timestamp      | as int64 / ms floor, UTC|
| timestamptz: io.debezium.time.ZonedTimestamp       | string         | rewritten (see below) |
| every column whose converter is `str` (text,       | string         | COPY's escapes undone |
| varchar, char, uuid, json, jsonb, enums, numeric   |                |                       |
| in `string` mode, inet, arrays of other types, …)  |                |                       |
| arrays (`connectors.postgres.arrays`)              | string         | escapes undone, then  |
|                                                    |                | the per-row converter |
|                                                    |                | per value             |

A real (float32) column makes the table unsupported: the per-row path's value is the
double of the text, which a JSON message prints in full ("1.1"), while the column
would hold the float32 rounding of it.

A ZonedTimestamp column is accepted only when every value has the layout a UTC session
prints, `YYYY-MM-DD HH:MM:SS[.f]+00` with at most the column's p fraction digits: the
text the per-row converter rewrites without parsing. Its rewrite here is the same
(`T` between date and time, the fraction padded to p digits, `Z` for `+00`); any other
value (another offset, a year past 9999 or BC, `infinity`) makes the chunk None.

COPY escapes (`\\\\`, `\\t`, `\\n`, `\\r`, `\\b`, `\\f`, `\\v`: all PostgreSQL's COPY TO
writes) are undone with substring replacements: `\\\\` first becomes NUL, which no
PostgreSQL text holds, so the single-letter escapes after it are read left to right as
COPY wrote them; NUL becomes a backslash last. Any other backslash makes the chunk None.

A table with a column of another kind is unsupported (`reason` names the column):
real, numeric without a declared precision in `precise` mode (VariableScaleDecimal), bytea,
interval, timetz, and numeric(p, s) with s outside 0 to p (PostgreSQL 15 allows both).
A chunk is None when the CSV reader refuses a value (a date or timestamp it cannot
read: infinity, BC, years past 9999, `24:00:00`; a numeric `NaN`), when a row has
another number of fields, or when it does not end with a newline.

Thread-safety: a parser holds only immutable options; `parse` may be called from any
thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from connect.api import (
    ARROW_TIMESTAMP,
    DataError,
    Date,
    Decimal,
    Schema,
    Time,
    Timestamp,
    Type,
    arrow_type,
    batch_from_values,
    schema_of,
)
from connectors.jdbc.types import (
    DBZ_DATE,
    DBZ_MICRO_TIME,
    DBZ_MICRO_TIMESTAMP,
    DBZ_TIME,
    DBZ_TIMESTAMP,
    DBZ_ZONED_TIMESTAMP,
)
from connectors.postgres.columns import BOOL, TIMESTAMPTZ
from connectors.postgres.tables import Table

__all__ = ["CopyArrowParser"]

_END = 2**31 - 1  # a slice's stop past any value's end
#: What finishes a column as read; None means the chunk goes the per-row way.
_Finish = Callable[[pa.Array], pa.Array | None]


@dataclass(frozen=True, slots=True)
class _Column:
    """How one column is read: the CSV reader's type, what finishes it, and whether
    it holds PostgreSQL's text as is (so COPY's escapes must be undone)."""

    read_as: pa.DataType
    finish: _Finish | None = None
    text: bool = False


# ------------------------------------------------------------------- finishers


def _view(typ: pa.DataType) -> _Finish:
    """The same bits as another type: a date32's days are the int32 Debezium sends."""
    return lambda array: array.view(typ)


def _cast(typ: pa.DataType) -> _Finish:
    # safe=False: time64[us] → time32[ms] truncates, which is the per-row path's
    # `// 1000` for times (never negative); float64 → float32 rounds as pyarrow rounds
    # a Python float
    return lambda array: array.cast(typ, safe=False)


def _connect_timestamp(array: pa.Array) -> pa.Array:
    """Connect's Timestamp: ms, floored (the per-row path drops the µs of the wall
    clock, which floors before the epoch too), labelled UTC."""
    floored = pc.floor_temporal(array, unit="millisecond")
    return floored.cast(pa.timestamp("ms")).cast(ARROW_TIMESTAMP)


def _zoned_timestamp(digits: int) -> _Finish:
    """io.debezium.time.ZonedTimestamp with exactly `digits` fraction digits, for a
    column of a UTC session's text only (see the module docstring).

    One regular expression checks the layout; the rewrite is then byte slicing and
    padding, cheaper than a regular expression's replacement (docs/performance.md)."""
    fraction = rf"(?:\.\d{{1,{digits}}})?" if digits else ""
    layout = rf"^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d{fraction}\+00$"

    def finish(array: pa.Array) -> pa.Array | None:
        if pc.all(pc.match_substring_regex(array, layout)).as_py() is False:
            return None  # null when every value is NULL: nothing to refuse
        dated = pc.binary_replace_slice(array, start=10, stop=11, replacement="T")
        if not digits:  # every value is 22 bytes: `+00` is 19 to 22
            return pc.binary_replace_slice(dated, start=19, stop=22, replacement="Z")
        bare = pc.binary_replace_slice(dated, start=-3, stop=_END, replacement="")
        whole = pc.equal(pc.binary_length(bare), 19)  # no fraction: give it its point
        pointed = pc.if_else(whole, pc.binary_join_element_wise(bare, ".", ""), bare)
        padded = pc.utf8_rpad(pointed, width=20 + digits, padding="0")
        return pc.binary_join_element_wise(padded, "Z", "")

    return finish


_ESCAPES = (
    ("\\t", "\t"),
    ("\\n", "\n"),
    ("\\r", "\r"),
    ("\\b", "\b"),
    ("\\f", "\f"),
    ("\\v", "\v"),
)


def _has(array: pa.Array, substring: str) -> bool:
    return pc.any(pc.match_substring(array, substring)).as_py() is True


def _may_have_backslash(array: pa.Array) -> bool:
    """Whether a string column's bytes hold a backslash: a `bytes` search of its data
    buffer (memchr) is far cheaper than a compute function's scan of its values
    (docs/performance.md), and NULLs (which take no bytes) never count."""
    data = array.buffers()[2]
    return data is not None and b"\\" in data.to_pybytes()


def _unescape(array: pa.Array) -> pa.Array | None:
    """A text column without COPY's escapes (see the module docstring); None when it
    holds NUL or a backslash escape COPY TO does not write."""
    if not _may_have_backslash(array):
        return array
    if _has(array, "\x00"):
        return None
    out = pc.replace_substring(array, "\\\\", "\x00")
    for code, char in _ESCAPES:
        out = pc.replace_substring(out, code, char)
    if _has(out, "\\"):
        return None
    return pc.replace_substring(out, "\x00", "\\")


def _per_value(schema: Schema, convert: Callable[[str], object]) -> _Finish:
    """A column only the per-row converter can make (an array's elements): each text
    converted in Python, then the column made as the per-row path makes it — so the
    rest of the table's columns still go through the reader in C. A value with no
    Connect value makes the chunk None: the per-row path raises its error."""

    def finish(array: pa.Array) -> pa.Array | None:
        try:
            values = [None if t is None else convert(t) for t in array.to_pylist()]
        except DataError:
            return None
        return batch_from_values(schema, values).column(0)

    return finish


# ---------------------------------------------------------------------- plans


def _precision(typmod: int) -> int:
    """Fraction digits of a timestamptz column (as `connectors.postgres.columns`)."""
    return typmod if 0 <= typmod <= 6 else 6


def _plan(type_oid: int, typmod: int, schema: Schema, convert: object) -> _Column | str:
    """How to read a column of `schema` (and converter `convert`), or why not."""
    name = schema.name
    if convert is str:  # the text as is, whatever the type
        return _Column(pa.string(), text=True)
    if convert is int:
        return _Column(arrow_type(schema))
    if convert is float:
        if schema.type is Type.FLOAT32:
            # The record path's value is the double of the text ("1.1"), which a JSON
            # message prints as such; a float32 column would print 1.100000023841858.
            return "a real column is a double in the record path, not a float32"
        return _Column(pa.float64())
    if type_oid == BOOL:
        return _Column(pa.bool_())
    if name == Decimal.LOGICAL_NAME:
        target = arrow_type(schema)
        if not 0 <= target.scale <= target.precision:
            # a scale past the precision (PostgreSQL 15's numeric(3, 5)) the CSV reader
            # refuses, and so does pa.array (the per-row path) for most values
            return f"numeric({target.precision}, {target.scale}): a scale outside 0 to p"
        return _Column(target)
    if name == DBZ_DATE:
        return _Column(pa.date32(), _view(pa.int32()))
    if name == Date.LOGICAL_NAME:
        return _Column(pa.date32())
    if name == DBZ_TIME:
        return _Column(pa.time32("ms"), _view(pa.int32()))
    if name == DBZ_MICRO_TIME:
        return _Column(pa.time64("us"), _view(pa.int64()))
    if name == Time.LOGICAL_NAME:
        return _Column(pa.time64("us"), _cast(pa.time32("ms")))
    if name == DBZ_TIMESTAMP:
        return _Column(pa.timestamp("ms"), _view(pa.int64()))
    if name == DBZ_MICRO_TIMESTAMP:
        return _Column(pa.timestamp("us"), _view(pa.int64()))
    if name == Timestamp.LOGICAL_NAME:
        return _Column(pa.timestamp("us"), _connect_timestamp)
    if name == DBZ_ZONED_TIMESTAMP and type_oid == TIMESTAMPTZ:
        return _Column(pa.string(), _zoned_timestamp(_precision(typmod)))
    if schema.type is Type.ARRAY and callable(convert):
        return _Column(pa.string(), _per_value(schema, convert), text=True)
    return f"no columnar reading of {name or schema.type.name.lower()}"


class CopyArrowParser:
    """Whole lines of one table's COPY text format → one `pa.RecordBatch` of
    `schema_of(table.row_schema)` (every column; the value's when no column filter
    applies), or None for the per-row path.

    Built once per table (the reading plan and the CSV reader's options);
    `supported` is False, and `reason` says why, when a column has no columnar
    reading — `parse` then answers None for every chunk."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.reason: str | None = None
        self.schema: pa.Schema | None = None
        plans: list[_Column] = []
        for column, oid, typmod, field, convert in zip(
            table.columns,
            table.type_oids,
            table.typmods,
            table.row_schema.fields,
            table.converters,
            strict=True,
        ):
            try:
                plan = _plan(oid, typmod, field.schema, convert)
            except DataError as exc:  # a schema with no Arrow type
                plan = str(exc)
            if isinstance(plan, str):
                self.reason = f"column {column!r} of {table.qualified}: {plan}"
                return
            plans.append(plan)
        self.schema = schema_of(table.row_schema)  # every column; the value is cut after
        for plan, field in zip(plans, self.schema, strict=True):
            finished = plan.finish(pa.array([], plan.read_as)) if plan.finish else None
            made = plan.read_as if finished is None else finished.type
            if made != field.type:  # a plan that disagrees with connect.api.arrow
                self.reason = f"column {field.name!r}: read as {made}, but {field.type} is due"
                return
        self._plans = plans
        names = [f"c{i}" for i in range(len(plans))]
        self._names = names
        self._parse = pacsv.ParseOptions(
            delimiter="\t",
            quote_char=False,
            escape_char=False,
            newlines_in_values=False,
            ignore_empty_lines=False,  # a one-column row of '' is an empty line
        )
        self._convert = pacsv.ConvertOptions(
            column_types={n: p.read_as for n, p in zip(names, plans, strict=True)},
            null_values=["\\N"],
            true_values=["t"],
            false_values=["f"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )

    @property
    def supported(self) -> bool:
        return self.reason is None

    def parse(self, chunk: bytes) -> pa.RecordBatch | None:
        """The columns of `chunk` (whole lines of COPY's text format), or None when the
        per-row path must parse it (see the module docstring)."""
        if self.schema is None or not chunk.endswith(b"\n"):
            return None
        read = pacsv.ReadOptions(
            column_names=self._names,
            # one thread: a chunk is one block, and the snapshot's reader thread and the
            # task's thread already keep the cores busy
            use_threads=False,
            block_size=max(len(chunk), 1 << 20),  # one block: one chunk per column
        )
        try:
            table = pacsv.read_csv(
                pa.py_buffer(chunk),
                read_options=read,
                parse_options=self._parse,
                convert_options=self._convert,
            )
        except pa.ArrowInvalid:
            return None
        arrays = []
        for plan, column in zip(self._plans, table.columns, strict=True):
            array: pa.Array | None = (
                column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
            )
            if plan.text:
                array = _unescape(array)
            if array is not None and plan.finish is not None:
                array = plan.finish(array)
            if array is None:
                return None
            arrays.append(array)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
