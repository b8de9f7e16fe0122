from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect.transforms.cast import CastKey, CastValue

from .conftest import configured


@pytest.mark.parametrize(
    ("target", "value", "expected"),
    [
        ("int8", 300, 44),  # Java narrowing wraps
        ("int16", 70000, 4464),
        ("int32", 2**40 + 5, 5),
        ("int64", 12.9, 12),  # floats truncate toward zero
        ("int32", -12.9, -12),
        ("int8", True, 1),
        ("int32", "42", 42),
        ("float32", 0.1, pytest.approx(0.1, rel=1e-7)),
        ("float64", "2.5", 2.5),
        ("boolean", 0, False),
        ("boolean", -3, True),
        ("boolean", "TRUE", True),
        ("boolean", "yes", False),
        ("string", 42, "42"),
        ("string", 1.0, "1.0"),
        ("string", True, "true"),
        ("string", b"\x00\x01", "AAE="),
        ("string", 1.5e10, "1.5E10"),
    ],
)
def test_whole_value_schemaless(sink, target, value, expected):
    out = configured(CastValue, spec=target).apply(sink(value=value))
    assert out.value == expected
    assert out.value_schema is None


def test_float32_rounds_like_java(sink):
    out = configured(CastValue, spec="float32").apply(sink(value=0.1))
    assert out.value != 0.1 and abs(out.value - 0.1) < 1e-8


def test_whole_key_with_schema(sink):
    out = configured(CastKey, spec="int32").apply(sink(key_schema=INT64_SCHEMA, key=7))
    assert out.key == 7 and out.key_schema.type is Type.INT32
    assert out.value is None


def test_whole_value_keeps_optional_and_casts_default(sink):
    schema = Schema(Type.INT64, optional=True, default=5)
    out = configured(CastValue, spec="string").apply(sink(value_schema=schema, value=None))
    assert out.value is None
    assert out.value_schema.type is Type.STRING and out.value_schema.optional
    assert out.value_schema.default == "5"


def test_struct_fields(sink):
    schema = Schema.struct(
        [("a", INT32_SCHEMA), ("b", OPTIONAL_INT32_SCHEMA), ("c", STRING_SCHEMA)], name="rec"
    )
    value = Struct(schema, {"a": 1, "b": None, "c": "3"})
    out = configured(CastValue, spec="a:string,b:int64,c:float64").apply(
        sink(value_schema=schema, value=value)
    )
    assert out.value_schema.name == "rec"
    assert [f.schema.type for f in out.value_schema.fields] == [
        Type.STRING,
        Type.INT64,
        Type.FLOAT64,
    ]
    assert out.value_schema.field("b").schema.optional
    assert out.value.to_dict() == {"a": "1", "b": None, "c": 3.0}
    out.value.validate()


def test_schema_is_cached(sink):
    schema = Schema.struct([("a", INT32_SCHEMA)])
    cast = configured(CastValue, spec="a:int64")
    one = cast.apply(sink(value_schema=schema, value=Struct(schema, {"a": 1})))
    equal = Schema.struct([("a", INT32_SCHEMA)])
    two = cast.apply(sink(value_schema=equal, value=Struct(equal, {"a": 2})))
    assert one.value_schema is two.value_schema


def test_schemaless_map_fields(sink):
    out = configured(CastValue, spec="a:int8,missing:string").apply(
        sink(value={"a": "12", "b": "x"})
    )
    assert out.value == {"a": 12, "b": "x"}


def test_logical_types_to_string(sink):
    schema = Schema.struct(
        [
            ("ts", Timestamp.schema()),
            ("d", Date.schema()),
            ("t", Time.schema()),
            ("dec", Decimal.schema(2)),
        ]
    )
    value = Struct(
        schema,
        {
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC),
            "d": dt.date(2024, 1, 2),
            "t": dt.time(3, 4, 5, 6000),
            "dec": decimal.Decimal("12.34"),
        },
    )
    out = configured(CastValue, spec="ts:string,d:string,t:string,dec:string").apply(
        sink(value_schema=schema, value=value)
    )
    assert out.value.to_dict() == {
        "ts": "2024-01-02T03:04:05.678Z",
        "d": "2024-01-02",
        "t": "03:04:05.006Z",
        "dec": "12.34",
    }
    assert all(f.schema.name is None for f in out.value_schema.fields)


def test_logical_types_to_numbers(sink):
    schema = Schema.struct([("ts", Timestamp.schema()), ("dec", Decimal.schema(2))])
    value = Struct(
        schema,
        {"ts": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC), "dec": decimal.Decimal("12.75")},
    )
    out = configured(CastValue, spec="ts:int64,dec:float64").apply(
        sink(value_schema=schema, value=value)
    )
    assert out.value.to_dict() == {"ts": 1000, "dec": 12.75}


def test_whole_logical_value_drops_the_logical_name(sink):
    out = configured(CastValue, spec="string").apply(
        sink(value_schema=Date.schema(), value=dt.date(2020, 2, 29))
    )
    assert out.value == "2020-02-29"
    assert out.value_schema.name is None and out.value_schema.type is Type.STRING


def test_bad_values_are_data_errors(sink):
    with pytest.raises(DataError):
        configured(CastValue, spec="int8").apply(sink(value="300"))
    with pytest.raises(DataError):
        configured(CastValue, spec="int32").apply(sink(value="1.5"))
    with pytest.raises(DataError):
        configured(CastValue, spec="int32").apply(sink(value=[1]))
    schema = Schema.struct([("s", Schema.struct([("x", INT32_SCHEMA)]))])
    with pytest.raises(DataError):
        configured(CastValue, spec="s:string").apply(
            sink(value_schema=schema, value=Struct(schema, {"s": None}))
        )


def test_tombstone(sink):
    assert configured(CastValue, spec="a:int8").apply(sink(value=None)).value is None


@pytest.mark.parametrize(
    "spec",
    ["", "a:bytes", "a:int8,int32", "int8,int16", "a:b:c", "a:notatype"],
)
def test_config_errors(spec):
    with pytest.raises(ConfigError) as info:
        configured(CastValue, spec=spec)
    assert info.value.name == "spec"
