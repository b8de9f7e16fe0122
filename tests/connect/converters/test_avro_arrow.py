"""AvroConverter's columnar paths equal its record paths: `from_arrow` writes the bytes
`from_connect_batch` writes, and `to_arrow` reads the batch `batch_from_values` makes
of what `to_connect_batch` reads; both answer None where they leave the work to the
record path. fastavro, behind the record paths, is the oracle."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import struct
import uuid
from collections.abc import Iterator
from io import BytesIO
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fastavro import parse_schema, schemaless_writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect.api.arrow import TIMESTAMP, batch_from_values, to_connect
from connect.api.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Struct,
    Type,
)
from connect.api.logical import Date, Decimal, Time, Timestamp
from connect.converters.avro import AvroConverter
from connect.converters.avro.client import drop_mock_registry, mock_registry
from connect.converters.errors import ConversionError

UTC = dt.UTC
TOPIC = "orders"
DATE_MIN = (dt.date.min - dt.date(1970, 1, 1)).days
DATE_MAX = (dt.date.max - dt.date(1970, 1, 1)).days
TS_MIN, TS_MAX = -62_135_596_800_000, 253_402_300_799_999


@pytest.fixture
def scope() -> Iterator[str]:
    name = f"avro-arrow-{uuid.uuid4().hex}"
    yield name
    drop_mock_registry(name)


def make(scope: str, **configs: Any) -> AvroConverter:
    c = AvroConverter()
    c.configure({"schema.registry.url": f"mock://{scope}", **configs}, False)
    return c


def record_path_bytes(c: AvroConverter, schema: Schema, batch: pa.RecordBatch) -> list[bytes]:
    """What the runtime's record path writes for the batch's rows."""
    values = to_connect(
        schema, pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
    )
    return c.from_connect_batch(TOPIC, [schema] * len(values), values)


def record_path_batch(c: AvroConverter, data: list[bytes]) -> tuple[Schema, pa.RecordBatch]:
    """What the record path reads from messages of one schema, as columns."""
    read = c.to_connect_batch(TOPIC, data)
    schema = read[0].schema
    assert all(sv.schema is schema for sv in read)
    return schema, batch_from_values(schema, [sv.value for sv in read])


def assert_round_trip(c: AvroConverter, schema: Schema, batch: pa.RecordBatch) -> list[bytes]:
    expected = record_path_bytes(c, schema, batch)
    got = c.from_arrow(TOPIC, schema, batch)
    assert got is not None, "from_arrow left a supported batch to the record path"
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"row {i}: {g.hex()} != {e.hex()}"
    runs = c.to_arrow(TOPIC, got)
    assert runs is not None, "to_arrow left supported messages to the record path"
    assert len(runs) == 1
    read_schema, read_batch, rows = runs[0]
    want_schema, want_batch = record_path_batch(c, got)
    assert read_schema is want_schema
    assert read_batch.schema == want_batch.schema
    assert same(read_batch, want_batch)
    assert rows.dtype == np.int64 and rows.tolist() == list(range(len(got)))
    return got


def same(a: pa.RecordBatch, b: pa.RecordBatch) -> bool:
    """Equal batches, floats compared by their bits (NaN equals the same NaN)."""
    if a.schema != b.schema:
        return False
    bits = {pa.float32(): pa.int32(), pa.float64(): pa.int64()}
    for x, y in zip(a.columns, b.columns, strict=True):
        if x.type in bits:
            x, y = x.view(bits[x.type]), y.view(bits[y.type])
        if not x.equals(y):
            return False
    return True


def single(schema: Schema, values: list[Any], name: str = "v") -> tuple[Schema, pa.RecordBatch]:
    record = Schema.struct([(name, schema)], name="com.acme.One")
    return record, batch_from_values(record, [Struct(record, {name: v}) for v in values])


def dec(text: str) -> decimal.Decimal:
    return decimal.Decimal(text)


EDGES: list[tuple[str, Schema, list[Any]]] = [
    ("int8", INT8_SCHEMA, [0, -1, 1, -128, 127, 63, 64, -64, -65]),
    ("int16", INT16_SCHEMA, [0, -(2**15), 2**15 - 1, 8191, 8192, -8193]),
    ("int32", INT32_SCHEMA, [0, -(2**31), 2**31 - 1, -1, 1, 300, -300]),
    ("int64", INT64_SCHEMA, [0, -(2**63), 2**63 - 1, -1, 1, 2**62, -(2**62) - 1, 2**56]),
    ("float32", FLOAT32_SCHEMA, [0.0, -0.0, 1.5, float("nan"), float("inf"), -float("inf"), 1e-45]),
    (
        "float64",
        FLOAT64_SCHEMA,
        [0.0, -0.0, 0.1, float("nan"), float("-inf"), 5e-324, 1.7976931348623157e308],
    ),
    ("boolean", BOOLEAN_SCHEMA, [True, False, True]),
    ("string", STRING_SCHEMA, ["", "a", "é", "日本語", "🎉x", "x" * 63, "y" * 64, "z" * 20_000]),
    ("bytes", BYTES_SCHEMA, [b"", b"\x00", b"\xff" * 200, bytes(range(256))]),
    (
        "decimal(12,2)",
        Decimal.schema(2, precision=12),
        [dec(s) for s in ("0.00", "0.01", "-0.01", "1.27", "1.28", "-1.28", "-1.29", "-2.56")]
        + [dec("9999999999.99"), dec("-9999999999.99"), dec("-327.68"), dec("327.67")],
    ),
    (
        "decimal(38,0)",
        Decimal.schema(0),
        [dec(-(2**63)), dec(2**64), dec(10**38 - 1), dec(-(10**38) + 1), dec(-(2**119))],
    ),
    ("date", Date.schema(), [dt.date(1970, 1, 1), dt.date.min, dt.date.max, dt.date(1969, 12, 31)]),
    ("time", Time.schema(), [dt.time(0), dt.time(23, 59, 59, 999_000), dt.time(12, 0, 0, 1000)]),
    (
        "timestamp",
        Timestamp.schema(),
        [
            dt.datetime(1970, 1, 1, tzinfo=UTC),
            dt.datetime(1, 1, 1, tzinfo=UTC),
            dt.datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC),
        ],
    ),
]


@pytest.mark.parametrize(("label", "schema", "values"), EDGES, ids=[e[0] for e in EDGES])
def test_every_type_at_its_edges(scope: str, label: str, schema: Schema, values: list) -> None:
    assert_round_trip(make(scope), *single(schema, values))


@pytest.mark.parametrize(("label", "schema", "values"), EDGES, ids=[e[0] for e in EDGES])
def test_every_type_optional_with_nulls(
    scope: str, label: str, schema: Schema, values: list
) -> None:
    with_nulls = [v for pair in zip(values, [None] * len(values), strict=True) for v in pair]
    assert_round_trip(make(scope), *single(schema.optional_(), [None, *with_nulls]))


def test_columns_of_nulls_only(scope: str) -> None:
    record = Schema.struct(
        [(f"f{i}", schema.optional_()) for i, (_, schema, _) in enumerate(EDGES)],
        name="com.acme.Nulls",
    )
    batch = batch_from_values(record, [Struct(record, {}) for _ in range(3)])
    assert all(column.null_count == 3 for column in batch.columns)
    assert_round_trip(make(scope), record, batch)


@pytest.mark.parametrize(("label", "schema", "values"), EDGES, ids=[e[0] for e in EDGES])
@pytest.mark.parametrize("optional", [False, True], ids=["required", "optional"])
def test_a_null_takes_the_fields_default(
    scope: str, label: str, schema: Schema, values: list, optional: bool
) -> None:
    # An optional field with a default is the union [T, "null"]: branch 0 is the value.
    field = schema.with_(default=values[-1], optional=optional)
    record, batch = single(field, [None, values[0], None])
    assert batch.column(0).null_count == 2
    assert_round_trip(make(scope), record, batch)


def test_the_union_branch_order_follows_the_default(scope: str) -> None:
    record = Schema.struct(
        [
            ("plain", OPTIONAL_STRING_SCHEMA),
            ("defaulted", STRING_SCHEMA.with_(optional=True, default="d")),
        ],
        name="com.acme.U",
    )
    batch = batch_from_values(record, [Struct(record, {"plain": "p", "defaulted": "q"})])
    (data,) = assert_round_trip(make(scope), record, batch)
    assert data[5:] == b"\x02\x02p" + b"\x00\x02q"  # ["null", T] then [T, "null"]


def test_fastavros_decimal_lengths(scope: str) -> None:
    # (bit_length(|x|) + 8) // 8 bytes: 0 is 00, and -128 is ff80, not the minimal 80.
    record, batch = single(Decimal.schema(0), [dec(0), dec(-128), dec(-1), dec(127), dec(128)])
    data = assert_round_trip(make(scope), record, batch)
    assert [d[5:] for d in data] == [
        b"\x02\x00",
        b"\x04\xff\x80",
        b"\x02\xff",
        b"\x02\x7f",
        b"\x04\x00\x80",
    ]


def wide(n_rows: int, *, offset: int = 0) -> tuple[Schema, pa.RecordBatch]:
    """The benchmark's ten columns and a few more."""
    schema = Schema.struct(
        [
            ("id", INT64_SCHEMA),
            ("name", STRING_SCHEMA),
            ("city", STRING_SCHEMA),
            ("street", STRING_SCHEMA),
            ("email", STRING_SCHEMA),
            ("qty", INT32_SCHEMA),
            ("price", FLOAT64_SCHEMA),
            ("amount", Decimal.schema(2, precision=12)),
            ("note", OPTIONAL_STRING_SCHEMA),
            ("ok", BOOLEAN_SCHEMA),
            ("at", Timestamp.schema(optional=True)),
            ("day", Date.schema()),
            ("ratio", FLOAT32_SCHEMA),
        ],
        name="com.acme.Wide",
    )
    rng = np.random.default_rng(7)
    ids = rng.integers(-(2**63), 2**63 - 1, n_rows, dtype=np.int64, endpoint=True)
    ids[: min(3, n_rows)] = [-(2**63), 2**63 - 1, 0][: min(3, n_rows)]
    cents = rng.integers(-(10**12) + 1, 10**12, n_rows)
    columns = [
        pa.array(ids),
        pa.array([f"name-{i}" for i in range(n_rows)]),
        pa.array(["Zürich", "", "東京", "x" * 200][i % 4] for i in range(n_rows)),
        pa.array([f"{i % 997} Main St" for i in range(n_rows)]),
        pa.array([f"user{i}@example.com" for i in range(n_rows)]),
        pa.array(rng.integers(-(2**31), 2**31, n_rows).astype(np.int32)),
        pa.array(rng.standard_normal(n_rows) * 1e6),
        pa.array([dec(int(c)).scaleb(-2) for c in cents], pa.decimal128(12, 2)),
        pa.array([None if i % 3 else f"note {i}" for i in range(n_rows)]),
        pa.array(rng.integers(0, 2, n_rows).astype(bool)),
        pa.array(
            [
                None if i % 5 == 0 else int(t)
                for i, t in enumerate(rng.integers(TS_MIN, TS_MAX, n_rows))
            ],
            TIMESTAMP,
        ),
        pa.array(rng.integers(DATE_MIN, DATE_MAX, n_rows).astype(np.int32), pa.date32()),
        pa.array(rng.standard_normal(n_rows).astype(np.float32)),
    ]
    batch = pa.RecordBatch.from_arrays(columns, names=[f.name for f in schema.fields])
    return schema, batch.slice(offset)


def test_fifty_thousand_rows(scope: str) -> None:
    assert_round_trip(make(scope), *wide(50_000))


def test_one_row(scope: str) -> None:
    assert_round_trip(make(scope), *wide(1))


def test_a_sliced_batch(scope: str) -> None:
    # Column buffers that start at an offset (bit-packed validity and booleans too).
    assert_round_trip(make(scope), *wide(203, offset=13))


def test_no_rows(scope: str) -> None:
    schema, batch = wide(0)
    c = make(scope)
    assert c.from_arrow(TOPIC, schema, batch) == []
    assert c.to_arrow(TOPIC, []) == []


def test_a_signalling_nan_float_comes_out_as_the_record_path_writes_it(scope: str) -> None:
    bits = np.array([0x7F800001, 0xFFC00001, 0x7FC00000], np.uint32)
    column = pa.Array.from_buffers(pa.float32(), 3, [None, pa.py_buffer(bits)])
    record = Schema.struct([("f", FLOAT32_SCHEMA)], name="com.acme.F")
    batch = pa.RecordBatch.from_arrays([column], names=["f"])
    c = make(scope)
    assert c.from_arrow(TOPIC, record, batch) == record_path_bytes(c, record, batch)


# ---------------------------------------------------------------- random records

KINDS: list[tuple[Schema, st.SearchStrategy]] = [
    (INT8_SCHEMA, st.integers(-(2**7), 2**7 - 1)),
    (INT16_SCHEMA, st.integers(-(2**15), 2**15 - 1)),
    (INT32_SCHEMA, st.integers(-(2**31), 2**31 - 1)),
    (INT64_SCHEMA, st.integers(-(2**63), 2**63 - 1)),
    (FLOAT32_SCHEMA, st.floats(width=32)),
    (FLOAT64_SCHEMA, st.floats()),
    (BOOLEAN_SCHEMA, st.booleans()),
    (STRING_SCHEMA, st.text(max_size=80)),
    (BYTES_SCHEMA, st.binary(max_size=80)),
    (
        Decimal.schema(2, precision=18),
        st.integers(-(10**18) + 1, 10**18 - 1).map(lambda i: dec(i).scaleb(-2)),
    ),
    (
        Decimal.schema(3, precision=20),
        st.integers(-(10**20) + 1, 10**20 - 1).map(lambda i: dec(i).scaleb(-3)),
    ),
    (Decimal.schema(0), st.integers(-(10**38) + 1, 10**38 - 1).map(dec)),
    (Date.schema(), st.dates()),
    (Time.schema(), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (
        Timestamp.schema(),
        st.integers(TS_MIN, TS_MAX).map(
            lambda ms: dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)
        ),
    ),
]


@st.composite
def records(draw: st.DrawFn) -> tuple[Schema, list[Struct]]:
    picks = draw(
        st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 2)), min_size=1, max_size=8)
    )
    fields, strategies = [], []
    for i, ((schema, values), mode) in enumerate(picks):
        if mode == 1:
            schema = schema.optional_()
        elif mode == 2:
            # JSON (the registered schema) holds no NaN or infinity: defaults are finite.
            default = draw(values.filter(lambda v: not isinstance(v, float) or math.isfinite(v)))
            schema = schema.with_(optional=draw(st.booleans()), default=default)
        fields.append((f"f{i}", schema))
        strategies.append(values if mode == 0 else st.none() | values)
    record = Schema.struct(fields, name="com.acme.Random")
    rows = draw(st.lists(st.tuples(*strategies), min_size=1, max_size=30))
    return record, [
        Struct(record, dict(zip([n for n, _ in fields], row, strict=True))) for row in rows
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.integers(0, 8))
def test_random_records_round_trip_as_the_record_path_does(made: tuple, skip: int) -> None:
    record, values = made
    scope = f"avro-arrow-{uuid.uuid4().hex}"
    batch = batch_from_values(record, values)
    batch = batch.slice(min(skip, batch.num_rows - 1))  # columns that start at an offset
    try:
        assert_round_trip(make(scope), record, batch)
    finally:
        drop_mock_registry(scope)


# ---------------------------------------------------------------- what goes the record way

INNER = Schema.struct([("a", INT32_SCHEMA)], name="com.acme.Inner")


@pytest.mark.parametrize(
    "field",
    [
        INNER,
        Schema.array(STRING_SCHEMA),
        Schema.map(STRING_SCHEMA, INT32_SCHEMA),
        Schema.map(INT32_SCHEMA, INT32_SCHEMA),
    ],
    ids=["struct", "array", "map", "map-of-entries"],
)
def test_nested_fields_are_left_to_the_record_path(scope: str, field: Schema) -> None:
    record = Schema.struct([("id", INT32_SCHEMA), ("x", field)], name="com.acme.Nested")
    value = {Type.STRUCT: Struct(INNER, {"a": 1}), Type.ARRAY: ["a"], Type.MAP: {1: 2}}[field.type]
    if field.type is Type.MAP and field.key_schema == STRING_SCHEMA:
        value = {"k": 2}
    batch = batch_from_values(record, [Struct(record, {"id": 1, "x": value})])
    c = make(scope)
    assert c.from_arrow(TOPIC, record, batch) is None
    data = c.from_connect_batch(TOPIC, [record], to_connect(record, _struct_of(batch)))
    assert c.to_arrow(TOPIC, data) is None


def _struct_of(batch: pa.RecordBatch) -> pa.StructArray:
    return pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))


def test_an_enum_of_enhanced_schema_support_is_left_to_the_record_path(scope: str) -> None:
    color = STRING_SCHEMA.with_(
        parameters={
            "io.confluent.connect.avro.Enum": "com.acme.Color",
            "io.confluent.connect.avro.Enum.RED": "RED",
            "io.confluent.connect.avro.Enum.GREEN": "GREEN",
        }
    )
    record, batch = single(color, ["RED", "GREEN"])
    c = make(scope, **{"enhanced.avro.schema.support": "true"})
    assert c.from_arrow(TOPIC, record, batch) is None
    assert c.to_arrow(TOPIC, record_path_bytes(c, record, batch)) is None


def test_columns_not_laid_out_as_the_schema_says_are_refused(scope: str) -> None:
    record, _ = single(INT64_SCHEMA, [1, 2])
    c = make(scope)
    as_int32 = pa.RecordBatch.from_arrays([pa.array([1, 2], pa.int32())], names=["v"])
    renamed = pa.RecordBatch.from_arrays([pa.array([1, 2])], names=["w"])
    assert c.from_arrow(TOPIC, record, as_int32) is None
    assert c.from_arrow(TOPIC, record, renamed) is None


def test_a_null_in_a_required_field_without_default_is_left_to_the_record_path(
    scope: str,
) -> None:
    record = Schema.struct([("v", STRING_SCHEMA)], name="com.acme.Req")
    batch = pa.RecordBatch.from_arrays([pa.array(["a", None])], names=["v"])
    c = make(scope)
    assert c.from_arrow(TOPIC, record, batch) is None
    with pytest.raises(ConversionError):
        record_path_bytes(c, record, batch)


def test_a_decimal_wider_than_its_precision_is_left_to_the_record_path(scope: str) -> None:
    record = Schema.struct([("d", Decimal.schema(0, precision=3))], name="com.acme.D")
    # Arrow builds the column unchecked; fastavro refuses the fourth digit.
    column = pa.array([dec(999), dec(1000)], pa.decimal128(10, 0)).cast(
        pa.decimal128(3, 0), safe=False
    )
    batch = pa.RecordBatch.from_arrays([column], names=["d"])
    c = make(scope)
    assert c.from_arrow(TOPIC, record, batch) is None
    with pytest.raises(ConversionError):
        record_path_bytes(c, record, batch)


def test_use_latest_version_writes_with_the_registered_schema(scope: str) -> None:
    record, batch = single(OPTIONAL_STRING_SCHEMA, ["a", None, "c"])
    make(scope).from_arrow(TOPIC, record, batch)  # registers it
    c = make(scope, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    assert c.from_arrow(TOPIC, record, batch) == record_path_bytes(c, record, batch)


def test_registrations_and_plans_are_cached(scope: str) -> None:
    record, batch = wide(10)
    c = make(scope)
    first = c.from_arrow(TOPIC, record, batch)
    assert c.from_arrow(TOPIC, record, batch) == first
    assert mock_registry(scope).calls["register"] == 1
    assert c.to_arrow(TOPIC, first) is not None and c.to_arrow(TOPIC, first) is not None
    assert len(c._arrow_writers) == 1 and len(c._arrow_readers) == 1


# ---------------------------------------------------------------- reading runs


def test_runs_follow_schema_ids_and_skip_tombstones(scope: str) -> None:
    v1 = Schema.struct([("a", INT32_SCHEMA)], name="com.acme.Evolving")
    v2 = Schema.struct(
        [("a", INT32_SCHEMA), ("b", OPTIONAL_STRING_SCHEMA)], name="com.acme.Evolving"
    )
    c = make(scope)

    def one(schema: Schema, **values: Any) -> bytes:
        return c.from_connect_data(TOPIC, schema, Struct(schema, values))

    data = [
        one(v1, a=1),
        one(v1, a=2),
        one(v2, a=3, b="x"),
        None,
        one(v2, a=4),
        one(v1, a=5),
        None,
    ]
    runs = c.to_arrow(TOPIC, data)
    assert runs is not None
    assert [rows.tolist() for _, _, rows in runs] == [[0, 1], [2, 4], [5]]
    for schema, batch, rows in runs:
        want_schema, want = record_path_batch(c, [data[i] for i in rows])
        assert schema is want_schema
        assert same(batch, want)
    assert [s.fields[-1].name for s, _, _ in runs] == ["a", "b", "a"]


def test_only_tombstones(scope: str) -> None:
    assert make(scope).to_arrow(TOPIC, [None, None]) == []


def test_reads_a_foreign_writers_record(scope: str) -> None:
    """Union branches in either order, foreign logical types (read as their base type)
    and properties Connect does not write."""
    avro = {
        "type": "record",
        "name": "Foreign",
        "namespace": "org.example",
        "fields": [
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "maybe", "type": ["string", "null"]},
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "n", "type": ["null", "long"], "default": None},
            {
                "name": "amount",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 4},
            },
            {"name": "flag", "type": "boolean"},
            {"name": "f", "type": "float"},
        ],
    }
    schema_id = mock_registry(scope).register(f"{TOPIC}-value", json.dumps(avro))
    parsed = parse_schema(avro)
    data = []
    for i in range(40):
        buf = BytesIO()
        buf.write(b"\x00" + struct.pack(">I", schema_id))
        datum = {
            "when": i * 10**9,
            "maybe": None if i % 2 else f"m{i}",
            "id": str(uuid.UUID(int=i)),
            "n": None if i % 3 else -i,
            "amount": dec(i * 12345 - 99999).scaleb(-4),
            "flag": i % 4 == 0,
            "f": i / 3,
        }
        schemaless_writer(buf, parsed, datum)
        data.append(buf.getvalue())
    runs = make(scope).to_arrow(TOPIC, data)
    assert runs is not None
    want_schema, want = record_path_batch(make(scope), data)
    assert runs[0][0] == want_schema and same(runs[0][1], want)


def test_values_the_record_path_cannot_read_into_columns_are_left_to_it(scope: str) -> None:
    # Written by a foreign writer as plain ints: an int8 field holding 300, a date past
    # year 9999, a time at midnight of the next day, and a decimal of more digits than
    # its precision (fastavro would round it, and Arrow refuse it).
    cases = [
        ({"type": "int", "connect.type": "int8"}, _body("int", 300)),
        ({"type": "int", "logicalType": "date"}, _body("int", DATE_MAX + 1)),
        ({"type": "int", "logicalType": "time-millis"}, _body("int", 86_400_000)),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 0},
            _body("bytes", (1000).to_bytes(2, "big")),
        ),
    ]
    for i, (avro_type, body) in enumerate(cases):
        avro = {"type": "record", "name": f"Bad{i}", "fields": [{"name": "v", "type": avro_type}]}
        schema_id = mock_registry(scope).register(f"{TOPIC}-value", json.dumps(avro))
        message = b"\x00" + struct.pack(">I", schema_id) + body
        c = make(scope)
        assert c.to_arrow(TOPIC, [message]) is None, avro_type
        with pytest.raises(Exception):  # noqa: B017 - any failure: the record path's own
            record_path_batch(c, [message])


def _body(avro: Any, datum: Any) -> bytes:
    buf = BytesIO()
    schemaless_writer(buf, parse_schema(avro), datum)
    return buf.getvalue()


def test_malformed_messages_are_left_to_the_record_path(scope: str) -> None:
    record = Schema.struct(
        [("n", INT64_SCHEMA), ("s", OPTIONAL_STRING_SCHEMA), ("b", BOOLEAN_SCHEMA)],
        name="com.acme.M",
    )
    c = make(scope)
    good = c.from_connect_data(TOPIC, record, Struct(record, {"n": 5, "s": "hé", "b": True}))
    header = good[:5]
    assert good[5:] == b"\x0a\x02\x06h\xc3\xa9\x01"
    bad = {
        "truncated": good[:-1],
        "trailing byte": good + b"\x00",
        "magic byte": b"\x01" + good[1:],
        "too short": good[:4],
        "empty": b"",
        "union index 2": header + b"\x0a\x04\x06h\xc3\xa9\x01",
        "negative length": header + b"\x0a\x02\x05h\xc3\xa9\x01",
        "length past the end": header + b"\x0a\x02\x7fh\xc3\xa9\x01",
        "invalid UTF-8": header + b"\x0a\x02\x06h\xc3\x28\x01",
        "a surrogate": header + b"\x0a\x02\x06\xed\xa0\x80\x01",
        "11-byte varint": header + b"\xff" * 10 + b"\x01\x00\x01",
        "varint past 64 bits": header + b"\xff" * 9 + b"\x03\x00\x01",
        "unknown schema id": b"\x00\x00\x00\x7f\xff" + good[5:],
    }
    for name, message in bad.items():
        assert c.to_arrow(TOPIC, [good, message, good]) is None, name
    assert c.to_arrow(TOPIC, [good, good]) is not None


def test_a_malformed_message_still_fails_on_the_record_path(scope: str) -> None:
    record, batch = single(STRING_SCHEMA, ["abc"])
    c = make(scope)
    (good,) = c.from_arrow(TOPIC, record, batch)
    with pytest.raises(ConversionError):
        c.to_connect_data(TOPIC, good[:-1])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.data())
def test_damaged_messages_read_as_the_record_path_reads_them_or_not_at_all(
    made: tuple, data: st.DataObject
) -> None:
    """Flip, drop or add bytes anywhere: to_arrow either leaves the messages to the
    record path, or reads exactly what it reads."""
    record, values = made
    scope = f"avro-arrow-{uuid.uuid4().hex}"
    try:
        c = make(scope)
        messages = c.from_connect_batch(TOPIC, [record] * len(values), values)
        i = data.draw(st.integers(0, len(messages) - 1))
        damaged = bytearray(messages[i])
        at = data.draw(st.integers(0, len(damaged)))
        how = data.draw(st.sampled_from(["flip", "drop", "add"]))
        if how == "flip" and at < len(damaged):
            damaged[at] ^= data.draw(st.integers(1, 255))
        elif how == "drop":
            del damaged[at : at + data.draw(st.integers(1, 3))]
        else:
            damaged[at:at] = data.draw(st.binary(min_size=1, max_size=3))
        messages[i] = bytes(damaged)
        runs = c.to_arrow(TOPIC, messages)
        if runs is None:
            return
        read = [c.to_connect_data(TOPIC, m) for m in messages]  # must not raise
        for schema, batch, rows in runs:
            assert all(read[r].schema is schema for r in rows)
            assert same(batch, batch_from_values(schema, [read[r].value for r in rows]))
        assert sorted(r for _, _, rows in runs for r in rows) == list(range(len(messages)))
    finally:
        drop_mock_registry(scope)


def test_a_long_default_fills_its_nulls(scope: str) -> None:
    long_default = "a default longer than a byte matrix is wide" * 3
    record, batch = single(STRING_SCHEMA.with_(default=long_default), [None, "x", None])
    assert_round_trip(make(scope), record, batch)


def test_a_default_fastavro_refuses_leaves_nulls_to_the_record_path(scope: str) -> None:
    # Registered fine (a default is JSON), but three digits do not fit precision 2.
    field = Decimal.schema(0, precision=2).with_(default=dec(123))
    record, batch = single(field, [dec(1), None])
    c = make(scope)
    assert c.from_arrow(TOPIC, record, batch) is None
    with pytest.raises(ConversionError):
        record_path_bytes(c, record, batch)
    without_nulls = batch_from_values(record, [Struct(record, {"v": dec(1)})])
    assert c.from_arrow(TOPIC, record, without_nulls) == record_path_bytes(c, record, without_nulls)


@pytest.mark.parametrize("arrow", [pa.string(), pa.binary()], ids=["string", "bytes"])
def test_a_null_slot_that_spans_bytes_is_still_null(scope: str, arrow: pa.DataType) -> None:
    # Arrow lets a null slot's offsets span data: it must not reach the message.
    field = OPTIONAL_STRING_SCHEMA if arrow == pa.string() else BYTES_SCHEMA.optional_()
    offsets = np.array([0, 3, 6, 8], np.int32)
    bitmap = np.packbits([False, True, False], bitorder="little")
    column = pa.Array.from_buffers(
        arrow, 3, [pa.py_buffer(bitmap), pa.py_buffer(offsets), pa.py_buffer(b"abcdefgh")]
    )
    record = Schema.struct([("v", field)], name="com.acme.Spans")
    batch = pa.RecordBatch.from_arrays([column], names=["v"])
    assert_round_trip(make(scope), record, batch)


def test_varints_of_every_length_read_as_the_record_path_reads_them(scope: str) -> None:
    """A column mixing varints of 1 to 10 bytes, each at the edges of its length, and
    padded encodings (continuation bytes of zeros, which fastavro accepts): the rows
    read from an 8-byte word, the one-byte rows, and the 9- and 10-byte ones read a
    byte at a time all come out as the record path reads them."""
    edges = [v for k in range(1, 10) for v in (2 ** (7 * k) - 1, 2 ** (7 * k))]
    values = [0, 1, -1, 2**63 - 1, -(2**63)] + [s * (e >> 1) for e in edges for s in (1, -1)]
    record, batch = single(INT64_SCHEMA, values, name="n")
    c = make(scope)
    messages = assert_round_trip(c, record, batch)
    header = messages[0][:5]
    # 5 (zig-zag 10) padded to 2..10 bytes: 0x8a, then 0x80s, then 0x00.
    padded = [header + b"\x8a" + b"\x80" * (k - 2) + b"\x00" for k in range(2, 11)]
    mixed = [m for pair in zip(messages, padded, strict=False) for m in pair] + messages
    runs = c.to_arrow(TOPIC, mixed)
    assert runs is not None, "to_arrow left valid varints to the record path"
    _, want = record_path_batch(c, mixed)
    (_, got, rows) = runs[0]
    assert got.column(0).to_pylist() == want.column(0).to_pylist()
    assert got.column(0).to_pylist()[1:18:2] == [5] * 9
    assert rows.tolist() == list(range(len(mixed)))
