"""InsertField and MaskField."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api import (
    INT32_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Date,
    Decimal,
    Schema,
    SchemaError,
    Struct,
    Timestamp,
    Type,
)
from connect.transforms.insert import InsertFieldKey, InsertFieldValue
from connect.transforms.mask import MaskFieldKey, MaskFieldValue

from .conftest import configured

SCHEMA = Schema.struct([("id", INT32_SCHEMA)], name="Row")
ALL = {
    "topic__field": "t",
    "partition__field": "p!",
    "offset__field": "o?",
    "timestamp__field": "ts",
    "static__field": "s",
    "static__value": "hello",
}


def test_insert_all_fields_with_schema(sink):
    record = sink(value_schema=SCHEMA, value=Struct(SCHEMA, {"id": 1}), kafka_partition=3)
    out = configured(InsertFieldValue, **ALL).apply(record)
    schema = out.value_schema
    assert [f.name for f in schema.fields] == ["id", "t", "p", "o", "ts", "s"]
    assert schema.name == "Row"
    assert schema.field("t").schema == Schema(Type.STRING, optional=True)
    assert schema.field("p").schema == Schema(Type.INT32)  # `!` makes it required
    assert schema.field("o").schema == Schema(Type.INT64, optional=True)
    assert schema.field("ts").schema == Timestamp.schema(optional=True)
    assert out.value.to_dict() == {
        "id": 1,
        "t": "test",
        "p": 3,
        "o": 42,
        "ts": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC),
        "s": "hello",
    }
    out.value.validate()


def test_insert_schemaless_timestamp_is_raw_millis(sink):
    out = configured(InsertFieldValue, **ALL).apply(sink(value={"id": 1}))
    assert out.value == {
        "id": 1,
        "t": "test",
        "p": 0,
        "o": 42,
        "ts": 1_700_000_000_000,
        "s": "hello",
    }


def test_insert_into_key(sink):
    out = configured(InsertFieldKey, topic__field="topic").apply(sink(key={"k": 1}))
    assert out.key == {"k": 1, "topic": "test"}


def test_insert_offset_needs_a_sink_record(source):
    xf = configured(InsertFieldValue, topic__field="t", partition__field="p")
    out = xf.apply(source(value={"a": 1}))
    assert out.value == {"a": 1, "t": "test", "p": 0}
    assert out.source_offset == {"position": 1}
    with pytest.raises(DataError, match="SinkRecord"):
        configured(InsertFieldValue, offset__field="o").apply(source(value={"a": 1}))


def test_insert_required_field_with_null_fails(source):
    record = source(value_schema=SCHEMA, value=Struct(SCHEMA, {"id": 1}), timestamp=None)
    optional = configured(InsertFieldValue, timestamp__field="ts").apply(record)
    assert optional.value.get("ts") is None
    with pytest.raises(SchemaError):
        configured(InsertFieldValue, timestamp__field="ts!").apply(record)


def test_insert_tombstone_passes_through(sink):
    record = sink(value_schema=SCHEMA, value=None)
    assert configured(InsertFieldValue, **ALL).apply(record) is record


def test_insert_schema_cached(sink):
    xf = configured(InsertFieldValue, topic__field="t")
    a = xf.apply(sink(value_schema=SCHEMA, value=Struct(SCHEMA, {"id": 1})))
    b = xf.apply(sink(value_schema=SCHEMA, value=Struct(SCHEMA, {"id": 2})))
    assert a.value_schema is b.value_schema


# -------------------------------------------------------------------- MaskField

MASKED = Schema.struct(
    [
        ("i", INT32_SCHEMA),
        ("f", Schema(Type.FLOAT64)),
        ("b", Schema(Type.BOOLEAN)),
        ("s", STRING_SCHEMA),
        ("d", Decimal.schema(2)),
        ("day", Date.schema()),
        ("ts", Timestamp.schema()),
        ("arr", Schema.array(INT32_SCHEMA)),
        ("m", Schema.map(STRING_SCHEMA, INT32_SCHEMA)),
        ("n", OPTIONAL_INT32_SCHEMA),
        ("keep", STRING_SCHEMA),
    ]
)
MASKED_VALUES = {
    "i": 5,
    "f": 1.5,
    "b": True,
    "s": "secret",
    "d": decimal.Decimal("1.25"),
    "day": dt.date(2020, 1, 1),
    "ts": dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
    "arr": [1],
    "m": {"a": 1},
    "n": None,
    "keep": "me",
}


def test_mask_with_schema_uses_null_equivalents(sink):
    fields = ",".join(k for k in MASKED_VALUES if k != "keep")
    out = configured(MaskFieldValue, fields=fields).apply(
        sink(value_schema=MASKED, value=Struct(MASKED, MASKED_VALUES))
    )
    assert out.value.to_dict() == {
        "i": 0,
        "f": 0.0,
        "b": False,
        "s": "",
        "d": decimal.Decimal(0),
        "day": dt.date(1970, 1, 1),
        "ts": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
        "arr": [],
        "m": {},
        "n": None,
        "keep": "me",
    }
    out.value.validate()


def test_mask_schemaless(sink):
    out = configured(MaskFieldKey, fields="i,s,b,l,absent").apply(
        sink(key={"i": 3, "s": "x", "b": True, "l": [1], "other": 1})
    )
    assert out.key == {"i": 0, "s": "", "b": False, "l": [], "other": 1}


@pytest.mark.parametrize(
    ("values", "replacement", "expected"),
    [
        ({"i": 5, "s": "x"}, "123", {"i": 123, "s": "123"}),
        ({"f": 1.5}, "2.5", {"f": 2.5}),
        ({"d": decimal.Decimal("3")}, "0.5", {"d": decimal.Decimal("0.5")}),
        ({"s": "card"}, "****", {"s": "****"}),
    ],
)
def test_mask_with_replacement(sink, values, replacement, expected):
    out = configured(MaskFieldValue, fields=",".join(values), replacement=replacement).apply(
        sink(value=values)
    )
    assert out.value == expected


def test_mask_replacement_errors(sink):
    with pytest.raises(DataError, match="Unable to convert"):
        configured(MaskFieldValue, fields="i", replacement="abc").apply(sink(value={"i": 1}))
    with pytest.raises(DataError, match="Cannot mask"):
        configured(MaskFieldValue, fields="b", replacement="x").apply(sink(value={"b": True}))
    schema = Schema.struct([("i", Schema(Type.INT8))])
    with pytest.raises(DataError):
        configured(MaskFieldValue, fields="i", replacement="1000").apply(
            sink(value_schema=schema, value=Struct(schema, {"i": 1}))
        )
    with pytest.raises(ConfigError) as info:
        configured(MaskFieldValue, fields="i", replacement="")
    assert info.value.name == "replacement"
    with pytest.raises(ConfigError) as info:
        configured(MaskFieldValue)
    assert info.value.name == "fields"


def test_mask_tombstone(sink):
    record = sink(value=None)
    assert configured(MaskFieldValue, fields="a").apply(record) is record
