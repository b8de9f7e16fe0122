"""JsonConverter messages → Arrow record batches, a run of messages at a time.

Why: JsonConverter's record path makes a Struct of Python objects per message (a
Decimal and a datetime per cell). Arrow's C++ JSON reader decodes the same payloads
into columns several times faster (figures: docs/performance.md), and a
sink that writes columns then needs no Python object per record at all. This is the
engine of `JsonConverter.to_arrow` (the runtime's) and of SparkParquetSink's older
`value.format=json` (bytes from ByteArrayConverter), which shares it.

Why it is part of the plugin API (`connect.api.JsonArrowReader`, with the JSON
codecs it stands on: `json_schema`, `json_decoders`, `json_values`): JsonConverter's
bytes are a format, like the Arrow mapping `connect.api.arrow` owns, and a connector
that reads them itself (SparkParquetSink's `value.format=json`, the Spark data
source, which runs without a worker) may import only `connect.api`. One copy serves
the runtime's converter and the plugins, so the two cannot drift apart.

1. Messages are grouped into runs that start with the same schema envelope prefix
   `{"schema":<schema JSON>,"payload":` (Kafka's JsonConverter writes the schema
   first, so the prefix of one schema is always the same bytes).
2. Each distinct prefix is planned once: its Connect schema (`schema_from_json`), the
   Arrow schema the JSON reader reads with, and the final Arrow schema
   (`connect.api.arrow.schema_of`), with a fix-up per column whose JSON form differs.
3. The payloads of a run (the message minus the prefix and the closing `}`) are
   joined with newlines and read with that explicit schema.
4. Fix-ups work on whole arrays: Timestamp/Date/Time numbers are cast (zero copy),
   base64 Decimals (JsonConverter's default `decimal.format=BASE64`) and bytes are
   decoded; NUMERIC decimals are read as decimals directly.

Strict (`JsonConverter.to_arrow`) means "exactly what the record path would give, or
an error": a null in a required field raises DataError, a null field with a default
takes the default (`replace.null.with.default`), and what the columns cannot express
(schemaless messages, maps, decimals or defaults inside nested values) raises
`NotColumnar`, so the runtime converts those messages record by record. Lenient (the
`value.format=json` alias) keeps that option's behaviour: schemaless JSON objects are
read with the types Arrow infers, and nulls are written as they are.

Null messages, empty messages and null payloads yield no row (in strict mode a null
payload is refused unless the value schema is optional without a default); `read`
returns the positions each batch's rows came from, so offsets stay attached.
"""

from __future__ import annotations

import base64
import decimal
import io
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import getitem
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from connect.api.arrow import arrow_type, batch_from_values, schema_of
from connect.api.data import Schema, Type
from connect.api.errors import DataError
from connect.api.json_schema import schema_from_json
from connect.api.logical import Date, Decimal, Time, Timestamp

__all__ = ["JsonArrowReader", "NotColumnar", "Run"]

_ENVELOPE = b'{"schema":'
_PAYLOAD = b',"payload":'
_NULL_PAYLOAD = b"null}"
_READ_OPTIONS = pj.ReadOptions(use_threads=False, block_size=64 << 20)
_BYTES_LIKE = (bytes, bytearray, memoryview)
_TEMPORAL = {Timestamp.LOGICAL_NAME, Date.LOGICAL_NAME, Time.LOGICAL_NAME}
_READ_AS = {Timestamp.LOGICAL_NAME: pa.int64(), Date.LOGICAL_NAME: pa.int32()}

#: (Connect schema — None for schemaless data —, batch, positions of its rows)
Run = tuple[Schema | None, pa.RecordBatch, np.ndarray]


class NotColumnar(DataError):
    """Messages this reader cannot turn into columns that mean what the record path
    would make of them; the caller converts them record by record instead."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to read one schema: the reader's types, and per column a fix-up."""

    schema: Schema
    read: pa.Schema
    final: pa.Schema
    fixes: tuple[tuple[int, str, Any], ...]  # (column, kind, argument)
    defaults: tuple[tuple[int, pa.Scalar], ...]  # (column, value for its nulls)
    required: tuple[tuple[int, Schema], ...]  # columns that may hold no null somewhere
    #: A null payload is a record without a value (else an error, in strict mode).
    null_ok: bool

    def numeric(self) -> _Plan | None:
        """The plan for `decimal.format=NUMERIC` (decimals as JSON numbers), if any
        column is a decimal."""
        decimals = {i for i, kind, _ in self.fixes if kind == "decimal"}
        if not decimals:
            return None
        read = pa.schema(
            [self.final.field(i) if i in decimals else f for i, f in enumerate(self.read)]
        )
        fixes = tuple(f for f in self.fixes if f[0] not in decimals)
        return _Plan(
            self.schema, read, self.final, fixes, self.defaults, self.required, self.null_ok
        )


def _read_type(schema: Schema, where: str) -> tuple[pa.DataType, tuple[str, Any] | None]:
    """(type read from JSON, fix-up) for one field of the value schema."""
    name = schema.name
    final = arrow_type(schema)
    if name == Decimal.LOGICAL_NAME:
        return pa.string(), ("decimal", final)  # base64, or a number (see `numeric`)
    if name in _TEMPORAL:
        return _READ_AS.get(name, pa.int32()), ("cast", final)
    t = schema.type
    if t is Type.BYTES:
        return pa.string(), ("bytes", None)
    if t is Type.MAP:
        raise NotColumnar(f"{where} is a map")
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        _, fix = _read_type(schema.value_schema, f"{where}[]")
        if fix is not None:
            raise NotColumnar(f"{where} is an array of {arrow_type(schema.value_schema)}")
        return final, None
    if t is Type.STRUCT:
        for f in schema.fields:
            _, fix = _read_type(f.schema, f"{where}.{f.name}")
            if fix is not None:
                raise NotColumnar(f"{where} is a struct with a {arrow_type(f.schema)} field")
        return final, None
    return final, None


def _nested_default(schema: Schema) -> bool:
    """Whether a schema inside this one (not itself) has a default value."""
    inner = [f.schema for f in schema.fields] if schema.type is Type.STRUCT else []
    inner += [s for s in (schema.key_schema, schema.value_schema) if s is not None]
    return any(s.default is not None or _nested_default(s) for s in inner)


def _needs_check(schema: Schema) -> bool:
    """Whether a null somewhere in a value of this schema would be an error."""
    if not schema.optional:
        return True
    inner = [f.schema for f in schema.fields] if schema.type is Type.STRUCT else []
    if schema.value_schema is not None:
        inner.append(schema.value_schema)
    return any(map(_needs_check, inner))


def _plan(schema_json: bytes, *, strict: bool, replace_null: bool) -> _Plan:
    try:
        schema = schema_from_json(orjson.loads(schema_json))
    except orjson.JSONDecodeError as exc:
        raise DataError(f"a schema envelope that is not JSON: {exc}") from exc
    if schema is None:
        raise NotColumnar("schemaless values (a null schema) have no columns")
    if schema.type is not Type.STRUCT:
        raise NotColumnar(f"{schema.type} values are not structs (one column per field)")
    read, fixes, defaults, required = [], [], [], []
    for i, f in enumerate(schema.fields):
        typ, fix = _read_type(f.schema, f.name)
        read.append(pa.field(f.name, typ))
        if fix is not None:
            fixes.append((i, fix[0], fix[1]))
        if not strict:
            continue
        if replace_null and _nested_default(f.schema):
            raise NotColumnar(f"{f.name} has defaults inside it")
        if replace_null and f.schema.default is not None:
            if f.schema.type is Type.STRUCT:
                raise NotColumnar(f"{f.name} is a struct with a default")
            default = batch_from_values(f.schema, [f.schema.default]).column(0)[0]
            defaults.append((i, default))
        elif _needs_check(f.schema):
            required.append((i, f.schema))
    null_ok = not strict or (schema.optional and not (replace_null and schema.default is not None))
    return _Plan(
        schema,
        pa.schema(read),
        schema_of(schema),
        tuple(fixes),
        tuple(defaults),
        tuple(required),
        null_ok,
    )


_B64 = np.full(256, 255, dtype=np.uint8)
_B64[
    np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
] = np.arange(64, dtype=np.uint8)
_B64[ord("=")] = 0


def _unscaled_int64(column: pa.StringArray) -> np.ndarray | None:
    """The base64 two's-complement big-endian integers of a string column as int64,
    decoded with numpy (a few array operations per distinct length, not a Python call
    per value); None when some value is not such a number or needs more than 8 bytes."""
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], np.int32)[column.offset : column.offset + n + 1]
    chars = np.frombuffer(column.buffers()[2], np.uint8)
    lengths = np.diff(offsets)
    out = np.zeros(n, dtype=np.int64)
    if column.null_count:
        valid = column.is_valid().to_numpy(zero_copy_only=False)
    else:
        valid = np.ones(n, dtype=bool)
    for length in np.unique(lengths[valid]).tolist():
        if length == 0 or length % 4 or length > 12:
            return None
        rows = np.nonzero(valid & (lengths == length))[0]
        text = chars[offsets[rows][:, None] + np.arange(length)]
        sextets = _B64[text]
        if (sextets == 255).any():
            return None
        pad = (text[:, -1] == ord("=")).astype(np.int64) + (text[:, -2] == ord("="))
        quads = sextets.reshape(len(rows), -1, 4).astype(np.int64)
        triples = (
            (quads[..., 0] << 18) | (quads[..., 1] << 12) | (quads[..., 2] << 6) | quads[..., 3]
        )
        raw = np.stack([(triples >> 16) & 255, (triples >> 8) & 255, triples & 255], axis=-1)
        raw = raw.reshape(len(rows), -1)  # the decoded bytes, padding bytes included
        nbytes = raw.shape[1] - pad
        if (nbytes > 8).any() or (nbytes < 1).any():
            return None
        value = np.zeros(len(rows), dtype=np.int64)
        for j in range(raw.shape[1]):
            inside = j < nbytes
            value = np.where(inside, (value << 8) | raw[:, j], value)
        # Sign-extend from each row's byte count: the wrap-around of int64 shifts is
        # exactly two's complement for values of up to 8 bytes.
        shift = (64 - 8 * nbytes).astype(np.int64)
        out[rows] = (value << shift) >> shift
    return out


def _decimal_column(column: pa.Array, typ: pa.Decimal128Type) -> pa.Array:
    """A base64 (JsonConverter's BASE64 format: two's-complement unscaled bytes) or
    numeric-string column as decimals."""
    unscaled = _unscaled_int64(column) if len(column) else None
    if unscaled is not None:
        words = np.empty((len(unscaled), 2), dtype=np.int64)
        words[:, 0] = unscaled
        words[:, 1] = unscaled >> 63  # the high word of the 128-bit integer
        validity = column.buffers()[0] if column.null_count and column.offset == 0 else None
        if not column.null_count or validity is not None:
            return pa.Array.from_buffers(
                typ,
                len(unscaled),
                [validity, pa.py_buffer(words.tobytes())],
                null_count=column.null_count,
            )
    scale = typ.scale
    out: list[decimal.Decimal | None] = []
    append = out.append
    b64 = base64.b64decode
    for v in column.to_pylist():
        if v is None:
            append(None)
            continue
        try:
            n = int.from_bytes(b64(v, validate=True), "big", signed=True)
            append(decimal.Decimal(n).scaleb(-scale, Decimal.EXACT))
        except ValueError:
            try:
                append(decimal.Decimal(v))
            except decimal.InvalidOperation as exc:
                raise DataError(f"{v!r} is neither a base64 nor a numeric decimal") from exc
    try:
        return pa.array(out, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataError(f"a decimal that does not fit {typ}: {exc}") from exc


def _fix(column: pa.Array, kind: str, arg: Any) -> pa.Array:
    if kind == "cast":
        return column.cast(arg)
    if kind == "decimal":
        return _decimal_column(column, arg)
    try:
        return pa.array(
            [None if v is None else base64.b64decode(v, validate=True) for v in column.to_pylist()],
            pa.binary(),
        )
    except ValueError as exc:
        raise DataError(f"bytes that are not base64: {exc}") from exc


def _required_nulls(array: pa.Array, schema: Schema, inherited: int) -> bool:
    """Whether `array` holds a null where `schema` forbids one; `inherited` of its nulls
    are its parent's (a null struct makes its fields null)."""
    if not schema.optional and array.null_count > inherited:
        return True
    if schema.type is Type.STRUCT:
        children = array.flatten()  # each child with the struct's nulls merged in
        return any(
            _required_nulls(child, f.schema, array.null_count)
            for f, child in zip(schema.fields, children, strict=True)
            if _needs_check(f.schema)
        )
    item = schema.value_schema
    if schema.type is Type.ARRAY and item is not None and _needs_check(item):
        return _required_nulls(array.flatten(), item, 0)
    return False


class JsonArrowReader:
    """Decodes JsonConverter messages a run at a time (see the module docstring)."""

    def __init__(
        self, *, strict: bool, replace_null_with_default: bool = True, cache_size: int = 1000
    ) -> None:
        self.strict = strict
        self.replace_null_with_default = replace_null_with_default
        self._cache_size = max(1, cache_size)
        self._plans: dict[bytes, _Plan] = {}

    def _plan_for(self, message: bytes) -> tuple[bytes, _Plan]:
        end = message.find(_PAYLOAD)
        if end < 0:
            raise DataError("a schema envelope without a payload")
        prefix = message[: end + len(_PAYLOAD)]
        plan = self._plans.get(prefix)
        if plan is None:
            plan = _plan(
                message[len(_ENVELOPE) : end],
                strict=self.strict,
                replace_null=self.replace_null_with_default,
            )
            if len(self._plans) >= self._cache_size:
                del self._plans[next(iter(self._plans))]
            self._plans[prefix] = plan
        return prefix, plan

    def read(self, values: Sequence[bytes | None]) -> list[Run]:
        """Record batches of `values` in order, each with the positions in `values` of
        its rows; null and empty messages are in none."""
        if type(values) is not list:
            values = list(values)
        # Each test below is one C-level pass; `None in values` and a set of types cost
        # several times more per message (rich comparisons, hashing).
        if not all(values):  # a null or empty message: in no run
            present = [i for i, v in enumerate(values) if v]
            positions = np.asarray(present, np.int64)
            return [
                (schema, batch, positions[rows])
                for schema, batch, rows in self._read_bytes([values[i] for i in present])
            ]
        return self._read_bytes(values)

    def _read_bytes(self, values: list[Any]) -> list[Run]:
        try:
            return self._read_present(values)
        except TypeError:  # bytearray or memoryview messages: the fast paths take bytes
            if all(type(v) is bytes for v in values):
                raise
            strange = {type(v).__name__ for v in values if not isinstance(v, _BYTES_LIKE)}
            if strange:
                raise DataError(
                    f"JSON messages are bytes, not {', '.join(sorted(strange))}"
                ) from None
            return self._read_present([v if type(v) is bytes else bytes(v) for v in values])

    def _read_present(self, values: list[bytes]) -> list[Run]:
        out: list[Run] = []
        i, n = 0, len(values)
        while i < n:
            first = values[i]
            if type(first) is not bytes:
                raise TypeError("not bytes")  # see _read_bytes
            if not first.startswith(_ENVELOPE):
                if self.strict:
                    raise NotColumnar("a message without the schema envelope")
                j = i
                while j < n and not values[j].startswith(_ENVELOPE):
                    j += 1
                data = b"\n".join(values[i:j])
                try:
                    table = pj.read_json(io.BytesIO(data), read_options=_READ_OPTIONS)
                except pa.ArrowInvalid as exc:
                    raise DataError(f"schemaless JSON that Arrow cannot read: {exc}") from exc
                out.append((None, _one_batch(table), np.arange(i, j, dtype=np.int64)))
                i = j
                continue
            prefix, plan = self._plan_for(first)
            # The run's end and its null payloads, found by loops in C.
            rest = values[i:] if i else values
            if all(map(bytes.startswith, rest, repeat(prefix))):  # usual: one schema
                j = n
            else:
                j = i + list(map(bytes.startswith, rest, repeat(prefix))).index(False)
            run = rest[: j - i] if j < n else rest
            cut = len(prefix)
            if prefix + _NULL_PAYLOAD in run:
                rows = [i + k for k, v in enumerate(run) if v[cut:] != _NULL_PAYLOAD]
                if self.strict and not plan.null_ok and len(rows) < len(run):
                    raise DataError("a null payload for a value schema that is required")
                payloads = [values[k][cut:-1] for k in rows]
                positions = np.asarray(rows, np.int64)
            else:
                payloads = list(map(getitem, run, repeat(slice(cut, -1))))
                positions = np.arange(i, j, dtype=np.int64)
            if payloads:
                out.append((plan.schema, self._read(payloads, plan), positions))
            i = j
        return out

    def _read(self, payloads: list[bytes], plan: _Plan) -> pa.RecordBatch:
        data = b"\n".join(payloads)
        try:
            table = _read_json(data, plan)
        except pa.ArrowInvalid as exc:
            numeric = plan.numeric()
            if numeric is None:
                raise DataError(f"JSON payloads that do not fit their schema: {exc}") from exc
            try:
                table, plan = _read_json(data, numeric), numeric
            except pa.ArrowInvalid:
                raise DataError(f"JSON payloads that do not fit their schema: {exc}") from exc
        if table.num_rows != len(payloads):  # a payload over several lines, say
            raise DataError(f"{table.num_rows} rows read from {len(payloads)} JSON payloads")
        columns = [c.combine_chunks() for c in table.columns]
        try:
            for index, kind, arg in plan.fixes:
                columns[index] = _fix(columns[index], kind, arg)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DataError(f"JSON payloads that do not fit their schema: {exc}") from exc
        for index, default in plan.defaults:
            if columns[index].null_count:
                columns[index] = pc.fill_null(columns[index], default)
        for index, schema in plan.required:
            if _required_nulls(columns[index], schema, 0):
                name = plan.schema.fields[index].name
                raise DataError(f"a null in {name}, which is required and has no default")
        return pa.RecordBatch.from_arrays(columns, schema=plan.final)


def _read_json(data: bytes, plan: _Plan) -> pa.Table:
    return pj.read_json(
        io.BytesIO(data),
        read_options=_READ_OPTIONS,
        parse_options=pj.ParseOptions(
            explicit_schema=plan.read, unexpected_field_behavior="ignore"
        ),
    )


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    batches = table.combine_chunks().to_batches()
    if not batches:
        return pa.RecordBatch.from_arrays(
            [pa.array([], f.type) for f in table.schema], schema=table.schema
        )
    return batches[0]
