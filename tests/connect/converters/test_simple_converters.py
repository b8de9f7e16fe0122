"""StringConverter, ByteArrayConverter and the primitive converters."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api import (
    BYTES_SCHEMA,
    INT32_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    Schema,
    Struct,
)
from connect.converters import (
    BooleanConverter,
    ByteArrayConverter,
    ConversionError,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
    StringConverter,
)


def string(**configs: str) -> StringConverter:
    converter = StringConverter()
    converter.configure(configs, False)
    return converter


# ------------------------------------------------------------------ strings


def test_string_utf8_round_trip() -> None:
    conv = string()
    assert conv.from_connect_data("t", STRING_SCHEMA, "héllo ☃") == "héllo ☃".encode()
    assert conv.to_connect_data("t", "héllo ☃".encode()) == (OPTIONAL_STRING_SCHEMA, "héllo ☃")
    assert conv.from_connect_data("t", None, None) is None
    assert conv.to_connect_data("t", None) == (OPTIONAL_STRING_SCHEMA, None)


def test_string_encoding_config() -> None:
    conv = string(**{"converter.encoding": "UTF-16"})
    assert conv.to_connect_data("t", conv.from_connect_data("t", None, "ab")).value == "ab"
    latin = string(**{"converter.encoding": "ISO-8859-1"})
    assert latin.from_connect_data("t", None, "é") == b"\xe9"
    assert latin.from_connect_batch("t", [None], ["é"]) == [b"\xe9"]
    assert string(**{"serializer.encoding": "ISO-8859-1"}).encoding == "iso8859-1"
    with pytest.raises(ConfigError, match=r"converter.encoding"):
        string(**{"converter.encoding": "no-such-charset"})
    assert "converter.encoding" in StringConverter().config()


def test_string_writes_java_to_string_forms() -> None:
    conv = string()
    schema = Schema.struct([("a", INT32_SCHEMA), ("b", OPTIONAL_STRING_SCHEMA)])
    assert conv.from_connect_data("t", None, True) == b"true"
    assert conv.from_connect_data("t", None, 1e10) == b"1.0E10"
    assert conv.from_connect_data("t", None, [1, "a"]) == b"[1, a]"
    assert conv.from_connect_data("t", None, {"k": 1}) == b"{k=1}"
    assert conv.from_connect_data("t", schema, Struct(schema, {"a": 1})) == b"Struct{a=1}"


def test_string_errors_name_the_topic() -> None:
    with pytest.raises(ConversionError, match=r"'orders'.*ascii"):
        string(**{"converter.encoding": "US-ASCII"}).from_connect_data("orders", None, "é")
    with pytest.raises(ConversionError, match=r"'orders'.*not valid utf-8"):
        string().to_connect_data("orders", b"\xff")
    with pytest.raises(ConversionError, match="'orders'"):
        string().to_connect_batch("orders", [b"ok", b"\xff"])


def test_string_batches() -> None:
    conv = string()
    assert conv.from_connect_batch("t", [None] * 3, ["a", None, 5]) == [b"a", None, b"5"]
    assert conv.to_connect_batch("t", [b"a", None, bytearray(b"c")]) == [
        (OPTIONAL_STRING_SCHEMA, "a"),
        (OPTIONAL_STRING_SCHEMA, None),
        (OPTIONAL_STRING_SCHEMA, "c"),
    ]


# -------------------------------------------------------------------- bytes


def test_byte_array_passthrough() -> None:
    conv = ByteArrayConverter()
    conv.configure({}, False)
    assert conv.from_connect_data("t", BYTES_SCHEMA, b"\x00\xff") == b"\x00\xff"
    assert conv.from_connect_data("t", None, bytearray(b"ab")) == b"ab"
    assert conv.from_connect_data("t", None, memoryview(b"ab")) == b"ab"
    assert conv.from_connect_data("t", None, None) is None
    assert conv.to_connect_data("t", b"x") == (OPTIONAL_BYTES_SCHEMA, b"x")
    assert conv.to_connect_data("t", None) == (OPTIONAL_BYTES_SCHEMA, None)
    assert conv.from_connect_batch("t", [None, BYTES_SCHEMA], [b"a", b"b"]) == [b"a", b"b"]
    assert conv.from_connect_batch("t", [None, None], [b"a", bytearray(b"b")]) == [b"a", b"b"]
    assert conv.to_connect_batch("t", [b"a", None]) == [
        (OPTIONAL_BYTES_SCHEMA, b"a"),
        (OPTIONAL_BYTES_SCHEMA, None),
    ]


def test_byte_array_refuses_other_types() -> None:
    conv = ByteArrayConverter()
    with pytest.raises(ConversionError, match=r"'t'.*not compatible with objects of type str"):
        conv.from_connect_data("t", None, "text")
    with pytest.raises(ConversionError, match="invalid schema type"):
        conv.from_connect_data("t", STRING_SCHEMA, b"x")
    with pytest.raises(ConversionError, match="invalid schema type"):
        conv.from_connect_batch("t", [STRING_SCHEMA], [b"x"])


# --------------------------------------------------------------- primitives

PRIMITIVES = [
    (ShortConverter, ">h", OPTIONAL_INT16_SCHEMA, [0, 1, -1, 2**15 - 1, -(2**15)]),
    (IntegerConverter, ">i", OPTIONAL_INT32_SCHEMA, [0, 42, -1, 2**31 - 1, -(2**31)]),
    (LongConverter, ">q", OPTIONAL_INT64_SCHEMA, [0, 42, -1, 2**63 - 1, -(2**63)]),
    (FloatConverter, ">f", OPTIONAL_FLOAT32_SCHEMA, [0.0, 1.5, -2.25, float("inf")]),
    (DoubleConverter, ">d", OPTIONAL_FLOAT64_SCHEMA, [0.0, 1e300, -2.5, 0.1]),
]


@pytest.mark.parametrize(("cls", "fmt", "schema", "values"), PRIMITIVES)
def test_primitive_formats(cls: type, fmt: str, schema: Schema, values: list) -> None:
    conv = cls()
    conv.configure({}, True)
    for value in values:
        data = conv.from_connect_data("t", None, value)
        assert data == struct.pack(fmt, value)  # Kafka's big-endian serializers
        assert conv.to_connect_data("t", data) == (schema, value)
    batch = conv.from_connect_batch("t", [None] * (len(values) + 1), [*values, None])
    assert batch == [struct.pack(fmt, v) for v in values] + [None]
    assert conv.to_connect_batch("t", batch) == [(schema, v) for v in values] + [(schema, None)]
    assert conv.to_connect_data("t", None) == (schema, None)


def test_integer_known_bytes() -> None:
    assert IntegerConverter().from_connect_data("t", None, 1) == b"\x00\x00\x00\x01"
    assert LongConverter().from_connect_data("t", None, -1) == b"\xff" * 8
    assert ShortConverter().from_connect_data("t", None, 258) == b"\x01\x02"
    assert DoubleConverter().from_connect_data("t", None, 1.0) == b"?\xf0" + b"\x00" * 6


@pytest.mark.parametrize(
    ("cls", "value", "match"),
    [
        (IntegerConverter, "1", "failed to serialize to integer"),
        (IntegerConverter, True, "failed to serialize to integer"),
        (IntegerConverter, 2**31, "out of range"),
        (ShortConverter, 1.5, "failed to serialize to short"),
        (FloatConverter, 1e300, "out of range"),
        (DoubleConverter, "x", "failed to serialize to double"),
    ],
)
def test_primitive_write_errors(cls: type, value: object, match: str) -> None:
    with pytest.raises(ConversionError, match=f"'orders'.*{match}"):
        cls().from_connect_data("orders", None, value)
    with pytest.raises(ConversionError, match=match):
        cls().from_connect_batch("orders", [None], [value])


def test_primitive_read_size_errors() -> None:
    with pytest.raises(ConversionError, match=r"'orders'.*not 4"):
        IntegerConverter().to_connect_data("orders", b"\x00\x01")
    with pytest.raises(ConversionError, match="not 8"):
        LongConverter().to_connect_batch("orders", [b"\x00" * 8, b"\x00"])


def test_boolean_converter() -> None:
    conv = BooleanConverter()
    conv.configure({}, False)
    assert conv.from_connect_data("t", None, True) == b"\x01"
    assert conv.from_connect_data("t", None, False) == b"\x00"
    assert conv.to_connect_data("t", b"\x01") == (OPTIONAL_BOOLEAN_SCHEMA, True)
    assert conv.to_connect_data("t", None) == (OPTIONAL_BOOLEAN_SCHEMA, None)
    assert conv.from_connect_batch("t", [None] * 3, [True, False, None]) == [
        b"\x01",
        b"\x00",
        None,
    ]
    assert conv.to_connect_batch("t", [b"\x00", None]) == [
        (OPTIONAL_BOOLEAN_SCHEMA, False),
        (OPTIONAL_BOOLEAN_SCHEMA, None),
    ]
    with pytest.raises(ConversionError, match="unexpected byte"):
        conv.to_connect_data("t", b"\x02")
    with pytest.raises(ConversionError, match="not 1"):
        conv.to_connect_batch("t", [b"\x00\x00"])
    with pytest.raises(ConversionError, match="boolean"):
        conv.from_connect_batch("t", [None], [1])


@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=20))
def test_hypothesis_long_batches(values: list) -> None:
    conv = LongConverter()
    data = conv.from_connect_batch("t", [None] * len(values), values)
    assert [sv.value for sv in conv.to_connect_batch("t", data)] == values
