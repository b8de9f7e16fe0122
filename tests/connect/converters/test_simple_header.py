"""SimpleHeaderConverter and Kafka's Values text forms."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
)
from connect.converters import SimpleHeaderConverter


@pytest.fixture
def headers() -> SimpleHeaderConverter:
    converter = SimpleHeaderConverter()
    converter.configure({})
    return converter


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("", STRING_SCHEMA, ""),
        ("hello world", STRING_SCHEMA, "hello world"),
        ("true", BOOLEAN_SCHEMA, True),
        ("false", BOOLEAN_SCHEMA, False),
        ("null", None, None),
        ("42", INT8_SCHEMA, 42),
        ("-129", INT16_SCHEMA, -129),
        ("40000", INT32_SCHEMA, 40000),
        ("4000000000", INT64_SCHEMA, 4000000000),
        ("1.5", FLOAT32_SCHEMA, 1.5),
        ("1e300", FLOAT64_SCHEMA, 1e300),
        ("99999999999999999999", Decimal.schema(0), decimal.Decimal("99999999999999999999")),
        ("2024-02-29", Date.schema(), dt.date(2024, 2, 29)),
        ("12:30:05.250Z", Time.schema(), dt.time(12, 30, 5, 250000)),
        (
            "2024-02-29T12:30:05.250Z",
            Timestamp.schema(),
            dt.datetime(2024, 2, 29, 12, 30, 5, 250000, tzinfo=dt.UTC),
        ),
        ("2024-13-45", STRING_SCHEMA, "2024-13-45"),
        ("[1,2,3]", Schema.array(INT8_SCHEMA), [1, 2, 3]),
        ("[1, 300]", Schema.array(INT16_SCHEMA), [1, 300]),
        ('["a", null]', Schema.array(OPTIONAL_STRING_SCHEMA), ["a", None]),
        ('[1, "a"]', None, [1, "a"]),
        ("[]", None, []),
        ('{"a":1,"b":2}', Schema.map(STRING_SCHEMA, INT8_SCHEMA), {"a": 1, "b": 2}),
        ("{1:true}", Schema.map(INT8_SCHEMA, BOOLEAN_SCHEMA), {1: True}),
        ("[1, oops", STRING_SCHEMA, "[1, oops"),
        ("{[1]:2}", STRING_SCHEMA, "{[1]:2}"),
        ("12abc", STRING_SCHEMA, "12abc"),
    ],
)
def test_parses_with_inferred_schema(
    headers: SimpleHeaderConverter, text: str, schema: Schema | None, value: object
) -> None:
    assert headers.to_connect_header("t", "h", text.encode()) == (schema, value)


@pytest.mark.parametrize(
    ("schema", "value", "text"),
    [
        (STRING_SCHEMA, "plain", "plain"),
        (BOOLEAN_SCHEMA, True, "true"),
        (INT32_SCHEMA, -7, "-7"),
        (FLOAT64_SCHEMA, 1e10, "1.0E10"),
        (None, b"\x00\x01", "AAE="),
        (Schema.array(STRING_SCHEMA), ["a", 'b"c'], '["a","b\\"c"]'),
        (None, {"k": [1, 2], "n": None}, '{"k":[1,2],"n":null}'),
        (Date.schema(), dt.date(2024, 2, 29), "2024-02-29"),
        (Time.schema(), dt.time(1, 2, 3, 4000), "01:02:03.004Z"),
        (
            Timestamp.schema(),
            dt.datetime(2024, 2, 29, 12, 0, tzinfo=dt.UTC),
            "2024-02-29T12:00:00.000Z",
        ),
        (Decimal.schema(2), decimal.Decimal("1.50"), "1.50"),
    ],
)
def test_writes_kafka_text(
    headers: SimpleHeaderConverter, schema: Schema | None, value: object, text: str
) -> None:
    assert headers.from_connect_header("t", "h", schema, value) == text.encode()


def test_struct_text(headers: SimpleHeaderConverter) -> None:
    schema = Schema.struct([("a", INT32_SCHEMA), ("b", OPTIONAL_STRING_SCHEMA)])
    data = headers.from_connect_header("t", "h", schema, Struct(schema, {"a": 1, "b": "x"}))
    assert data == b'{"a":1,"b":"x"}'
    assert headers.to_connect_header("t", "h", data).value == {"a": 1, "b": "x"}


@pytest.mark.parametrize(
    "value",
    [True, 5, 70000, -(2**40), 2.5, "text", [1, 2], {"a": "b"}, dt.date(2000, 1, 1)],
)
def test_round_trip(headers: SimpleHeaderConverter, value: object) -> None:
    data = headers.from_connect_header("t", "h", None, value)
    assert headers.to_connect_header("t", "h", data).value == value


def test_nulls_and_bad_utf8(headers: SimpleHeaderConverter) -> None:
    assert headers.from_connect_header("t", "h", None, None) is None
    assert headers.to_connect_header("t", "h", None) == (None, None)
    assert headers.to_connect_header("t", "h", b"\xff").value == "\ufffd"
