"""DropHeaders, InsertHeader, HeaderFrom, Filter, RegexRouter, TimestampRouter."""

from __future__ import annotations

import pytest

from connect.api import (
    INT8_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    ConfigError,
    DataError,
    Headers,
    Schema,
    Struct,
    Type,
)
from connect.transforms.filter import Filter
from connect.transforms.headers import (
    DropHeaders,
    HeaderFromKey,
    HeaderFromValue,
    InsertHeader,
    parse_literal,
)
from connect.transforms.routers import RegexRouter, TimestampRouter

from .conftest import configured


def test_drop_headers(sink):
    headers = Headers([("a", 1), ("b", 2), ("a", 3), ("c", 4)])
    record = sink(headers=headers)
    out = configured(DropHeaders, headers="a,c").apply(record)
    assert [h.key for h in out.headers] == ["b"]
    assert [h.key for h in record.headers] == ["a", "b", "a", "c"]  # the input is untouched
    with pytest.raises(ConfigError):
        configured(DropHeaders, headers="")


def test_insert_header(sink):
    record = sink(headers=Headers([("x", "1")]))
    out = configured(InsertHeader, header="env", value__literal="prod").apply(record)
    assert out.headers.last("env") == ("env", "prod", STRING_SCHEMA)
    assert len(record.headers) == 1
    number = configured(InsertHeader, header="n", value__literal="42").apply(record)
    assert number.headers.last("n") == ("n", 42, INT8_SCHEMA)
    with pytest.raises(ConfigError) as info:
        configured(InsertHeader, header="n")
    assert info.value.name == "value.literal"


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("true", Schema(Type.BOOLEAN), True),
        ("1000", Schema(Type.INT16), 1000),
        ("100000", INT32_SCHEMA, 100000),
        ("10000000000", INT64_SCHEMA, 10000000000),
        ("2.5", Schema(Type.FLOAT64), 2.5),
        ("hello world", STRING_SCHEMA, "hello world"),
        ("nan", STRING_SCHEMA, "nan"),
    ],
)
def test_parse_literal(text, schema, value):
    assert parse_literal(text) == (schema, value)


def test_header_from_copy_and_move_with_schema(sink):
    schema = Schema.struct([("id", INT32_SCHEMA), ("trace", STRING_SCHEMA)], name="V")
    value = Struct(schema, {"id": 1, "trace": "abc"})
    copy = configured(HeaderFromValue, fields="trace", headers="trace-id", operation="copy")
    out = copy.apply(sink(value_schema=schema, value=value))
    assert out.headers.last("trace-id") == ("trace-id", "abc", STRING_SCHEMA)
    assert out.value is value
    move = configured(HeaderFromValue, fields="trace,id", headers="t,i", operation="move")
    out = move.apply(sink(value_schema=schema, value=value))
    assert [h.key for h in out.headers] == ["t", "i"]
    assert out.value_schema.fields == () and out.value_schema.name == "V"


def test_header_from_schemaless_key(sink):
    xf = configured(HeaderFromKey, fields="a,missing", headers="h1,h2", operation="move")
    out = xf.apply(sink(key={"a": 1, "b": 2}))
    assert out.key == {"b": 2}
    assert list(out.headers) == [("h1", 1, None), ("h2", None, None)]


def test_header_from_config_errors():
    with pytest.raises(ConfigError) as info:
        configured(HeaderFromValue, fields="a,b", headers="h", operation="copy")
    assert info.value.name == "headers"
    with pytest.raises(ConfigError) as info:
        configured(HeaderFromValue, fields="a", headers="h", operation="steal")
    assert info.value.name == "operation"


def test_filter_drops(sink):
    assert configured(Filter).apply(sink(value=1)) is None


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("(.*)-raw", "$1", "orders-raw", "orders"),
        ("(?<name>[a-z]+)\\.(\\d+)", "${name}_v$2", "users.3", "users_v3"),
        ("(.*)", "prefix-$1", "t", "prefix-t"),
        ("orders", "x", "orders-raw", "orders-raw"),  # the whole name must match
        ("(.*)", "cost\\$$1", "a", "cost$a"),
    ],
)
def test_regex_router(sink, regex, replacement, topic, expected):
    out = configured(RegexRouter, regex=regex, replacement=replacement).apply(sink(topic=topic))
    assert out.topic == expected


def test_regex_router_config_errors():
    with pytest.raises(ConfigError) as info:
        configured(RegexRouter, regex="(unclosed", replacement="x")
    assert info.value.name == "regex"
    with pytest.raises(ConfigError) as info:
        configured(RegexRouter, regex="(a)", replacement="$2")
    assert info.value.name == "replacement"


def test_timestamp_router(sink):
    record = sink(topic="logs", timestamp=1_700_000_000_000)
    assert configured(TimestampRouter).apply(record).topic == "logs-20231114"
    custom = configured(
        TimestampRouter, topic__format="${timestamp}_${topic}", timestamp__format="yyyy.MM"
    )
    assert custom.apply(record).topic == "2023.11_logs"
    with pytest.raises(DataError, match="Timestamp missing"):
        configured(TimestampRouter).apply(sink(timestamp=None))
    with pytest.raises(ConfigError) as info:
        configured(TimestampRouter, timestamp__format="yyyy-q")
    assert info.value.name == "timestamp.format"
