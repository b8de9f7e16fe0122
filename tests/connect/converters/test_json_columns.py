"""The column-at-a-time JSON writer equals the value-by-value one, errors included."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
)
from connect.converters import ConversionError, JsonConverter
from connect.converters.json_columns import Fallback, compile_batch_writer, dump_column


class _Str(str):
    """A str subclass: the column path must not pass it through untouched."""


INNER = Schema.struct(
    [("n", INT8_SCHEMA), ("s", OPTIONAL_STRING_SCHEMA)], name="inner", optional=True
)
OTHER_INNER = Schema.struct([("n", INT8_SCHEMA)], name="other", optional=True)
UTC = dt.UTC

_inner_values = st.builds(
    lambda n, s: Struct(INNER, {"n": n, "s": s}),
    st.integers(-128, 127),
    st.none() | st.text(max_size=3),
)

# (field name, schema, strategy of its values: mostly valid, sometimes not)
FIELDS: list[tuple[str, Schema, st.SearchStrategy]] = [
    ("i8", INT8_SCHEMA, st.integers(-128, 127) | st.sampled_from([1000, True, 1.5, None])),
    ("i32", OPTIONAL_INT32_SCHEMA, st.none() | st.integers(-(2**31), 2**31 - 1)),
    ("i64d", INT64_SCHEMA.with_(default=7, optional=True), st.none() | st.integers(0, 10)),
    (
        "f64",
        FLOAT64_SCHEMA,
        st.floats(-1e6, 1e6) | st.sampled_from([0.0, -0.0, 1e-5, 3e9, math.nan, math.inf, 2, "x"]),
    ),
    ("f32", FLOAT32_SCHEMA.with_(optional=True), st.none() | st.floats(-100, 100)),
    ("b", BOOLEAN_SCHEMA, st.booleans() | st.sampled_from([1])),
    ("s", STRING_SCHEMA, st.text(max_size=8) | st.sampled_from([_Str("sub"), 5, "\x00,\x00"])),
    ("os", OPTIONAL_STRING_SCHEMA, st.none() | st.text(max_size=4)),
    ("by", OPTIONAL_BYTES_SCHEMA, st.none() | st.binary(max_size=6)),
    (
        "dec",
        Decimal.schema(2, optional=True),
        st.none()
        | st.decimals(places=2, min_value=-(10**9), max_value=10**9)
        | st.sampled_from([decimal.Decimal("1.005"), decimal.Decimal("NaN"), 1.5]),
    ),
    (
        "ts",
        Timestamp.schema(optional=True),
        st.none()
        | st.datetimes(timezones=st.just(UTC))
        | st.datetimes(max_value=dt.datetime(2100, 1, 1)),  # naive: taken as UTC
    ),
    ("d", Date.schema(optional=True), st.none() | st.dates() | st.sampled_from(["2024-01-01"])),
    ("t", Time.schema(optional=True), st.none() | st.times()),
    (
        "arr",
        Schema.array(OPTIONAL_INT32_SCHEMA, optional=True),
        st.none() | st.lists(st.none() | st.integers(-5, 5), max_size=3),
    ),
    (
        "map",
        Schema.map(STRING_SCHEMA, STRING_SCHEMA, optional=True),
        st.none() | st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    ),
    ("inner", INNER, st.none() | _inner_values | st.just(Struct(OTHER_INNER, {"n": 1}))),
]


@st.composite
def batches(draw: st.DrawFn) -> tuple[Schema, list[Struct | None]]:
    chosen = draw(
        st.lists(st.sampled_from(FIELDS), min_size=0, max_size=6, unique_by=lambda f: f[0])
    )
    schema = Schema.struct([(name, s) for name, s, _ in chosen], name="row", optional=True)
    shared = Struct(INNER, {"n": 3, "s": "shared"})
    rows: list[Struct | None] = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 15)) == 0:
            rows.append(None)
            continue
        fields: list = [None] * len(schema.fields)
        for name, _, values in chosen:
            value = draw(values)
            if name == "inner" and draw(st.booleans()):
                value = shared  # one object in many records, as a CDC `source` block
            fields[schema.field(name).index] = value
        rows.append(Struct.trusted(schema, fields))
    return schema, rows


def _one_by_one(conv: JsonConverter, schema: Schema, rows: list) -> list[bytes | None] | str:
    try:
        return [conv.from_connect_data("t", schema, r) for r in rows]
    except ConversionError as exc:
        return str(exc)


def _batch(conv: JsonConverter, schema: Schema, rows: list) -> list[bytes | None] | str:
    try:
        return conv.from_connect_batch("t", [schema] * len(rows), rows)
    except ConversionError as exc:
        return str(exc)


@settings(max_examples=400, deadline=None)
@given(batches(), st.booleans(), st.sampled_from(["BASE64", "NUMERIC"]))
def test_batch_equals_value_by_value(batch: tuple, schemas: bool, decimal_format: str) -> None:
    schema, rows = batch
    conv = JsonConverter()
    conv.configure(
        {"schemas.enable": str(schemas).lower(), "decimal.format": decimal_format}, is_key=False
    )
    assert _batch(conv, schema, rows) == _one_by_one(conv, schema, rows)


def test_dump_column_splits_exactly_at_its_separators() -> None:
    values = ["a,\x00,b", {"k": ",\x00,"}, [1, "\x00"], None, 1.5, orjson.Fragment(b"12.50")]
    assert dump_column(values) == [orjson.dumps(v) for v in values]
    assert dump_column([]) == []


def test_shared_structs_are_written_once_and_equal() -> None:
    outer = Schema.struct([("inner", INNER), ("k", INT64_SCHEMA)], name="outer")
    shared = Struct(INNER, {"n": 1, "s": "x"})
    rows = [Struct(outer, {"inner": shared, "k": i}) for i in range(100)]
    texts = compile_batch_writer(outer)(rows)
    assert texts == [orjson.dumps({"inner": {"n": 1, "s": "x"}, "k": i}) for i in range(100)]


def test_a_required_null_sends_the_batch_back() -> None:
    write = compile_batch_writer(Schema.struct([("n", INT8_SCHEMA)], name="r"))
    with pytest.raises(Fallback):
        write([None])


@settings(max_examples=100, deadline=None)
@given(batches(), batches())
def test_mixed_schemas_and_tombstones_equal_value_by_value(one: tuple, two: tuple) -> None:
    conv = JsonConverter()
    conv.configure({"schemas.enable": "false"}, is_key=False)
    schemas: list[Schema | None] = []
    rows: list = []
    for (schema_a, rows_a), (schema_b, rows_b) in [(one, two)]:
        for i, (a, b) in enumerate(zip(rows_a, rows_b, strict=False)):
            schemas += [schema_a, None, schema_b] if i % 2 else [schema_b, schema_a]
            rows += [a, None, b] if i % 2 else [b, a]
    try:
        expected = [conv.from_connect_data("t", s, r) for s, r in zip(schemas, rows, strict=True)]
    except ConversionError:
        with pytest.raises(ConversionError):
            conv.from_connect_batch("t", schemas, rows)
        return
    assert conv.from_connect_batch("t", schemas, rows) == expected


def _read_one_by_one(conv: JsonConverter, data: list[bytes | None]) -> list | str:
    try:
        return [conv.to_connect_data("t", d) for d in data]
    except ConversionError as exc:
        return str(exc)


def _read_batch(conv: JsonConverter, data: list[bytes | None]) -> list | str:
    try:
        return conv.to_connect_batch("t", data)
    except ConversionError as exc:
        return str(exc)


_odd_values = st.sampled_from([None, 1.5, 300, -(2**40), "x", True, [1], {"a": 1}, 2**63])


@settings(max_examples=300, deadline=None)
@given(batches(), st.data())
def test_batch_reads_equal_value_by_value(batch: tuple, data: st.DataObject) -> None:
    """What the writer wrote reads back the same in a batch as one by one, and so do
    payloads with a field of another type or out of range (errors included)."""
    schema, rows = batch
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, is_key=False)
    try:
        written = [conv.from_connect_data("t", schema, r) for r in rows]
    except ConversionError:
        return  # the strategy's invalid values: the write tests cover them
    first = written[0]
    if schema.fields and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(written) - 1))
        field = data.draw(st.sampled_from([f.name for f in schema.fields]))
        envelope = orjson.loads(written[i])
        if envelope["payload"] is not None:
            envelope["payload"][field] = data.draw(_odd_values)
            written[i] = orjson.dumps(envelope)
    reader = JsonConverter()
    reader.configure({"schemas.enable": "true"}, is_key=False)
    reader.to_connect_data("t", first)  # the schema is known: the batch path applies
    assert _read_batch(reader, written) == _read_one_by_one(reader, written)


@pytest.mark.parametrize("odd", [300, 1.5, "7", None, True])
def test_a_bad_field_in_a_read_batch_fails_as_one_by_one(odd: object) -> None:
    schema = Schema.struct([("n", INT8_SCHEMA), ("f", FLOAT64_SCHEMA)], name="r")
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, is_key=False)
    written = [
        conv.from_connect_data("t", schema, Struct(schema, {"n": i, "f": i / 2})) for i in range(10)
    ]
    conv.to_connect_data("t", written[0])
    envelope = orjson.loads(written[5])
    envelope["payload"]["n"] = odd
    written[5] = orjson.dumps(envelope)
    one_by_one = _read_one_by_one(conv, written)
    assert isinstance(one_by_one, str) and "n" in one_by_one
    assert _read_batch(conv, written) == one_by_one
    # and an int where a float is due is a float, as one by one
    envelope["payload"] = {"n": 1, "f": 2}
    written[5] = orjson.dumps(envelope)
    batch = _read_batch(conv, written)
    assert batch == _read_one_by_one(conv, written)
    assert type(batch[5].value.get("f")) is float
