"""JsonConverter.to_arrow (json_arrow_read): the columns hold exactly what the record
path (`to_connect_batch`, then `connect.api.arrow`) makes of the same messages; None
for what columns cannot express; an error where the record path has one."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from connect.api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect.api.arrow import batch_from_values
from connect.api.json_schema import schema_to_json
from connect.converters import ConversionError, JsonConverter

INNER = Schema.struct([("a", INT32_SCHEMA), ("b", OPTIONAL_STRING_SCHEMA)], optional=True)
WIDE = Schema.struct(
    [
        ("i8", INT8_SCHEMA),
        ("i16", INT16_SCHEMA),
        ("i32", INT32_SCHEMA),
        ("i64", INT64_SCHEMA),
        ("f32", FLOAT32_SCHEMA),
        ("f64", FLOAT64_SCHEMA),
        ("flag", BOOLEAN_SCHEMA),
        ("text", STRING_SCHEMA),
        ("blob", BYTES_SCHEMA),
        ("maybe", OPTIONAL_STRING_SCHEMA),
        ("amount", Decimal.schema(2, precision=12)),
        ("big", Decimal.schema(4, optional=True)),
        ("day", Date.schema()),
        ("at", Timestamp.schema()),
        ("clock", Time.schema()),
        ("tags", Schema(Type.ARRAY, value_schema=STRING_SCHEMA)),
        ("inner", INNER),
        ("counted", Schema(Type.INT64, optional=True, default=7)),
    ],
    name="wide",
    optional=True,
)


def wide(i: int) -> Struct:
    value = Struct(WIDE)
    value.put("i8", i % 100 - 50).put("i16", -i).put("i32", i * 1000).put("i64", i << 40)
    value.put("f32", i / 4).put("f64", i / 3).put("flag", i % 2 == 0).put("text", f"t{i}é")
    value.put("blob", bytes([i % 256, 0, 255])).put("maybe", None if i % 3 else f"m{i}")
    value.put("amount", decimal.Decimal(i * 1234567 - 500).scaleb(-2))
    value.put("big", None if i % 5 == 0 else decimal.Decimal(10**22 + i).scaleb(-4))
    value.put("day", dt.date(2020, 1, 1) + dt.timedelta(days=i))
    value.put("at", dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=i))
    value.put("clock", dt.time(1, 2, 3, 4000))
    value.put("tags", [f"x{j}" for j in range(i % 3)])
    value.put("inner", None if i % 4 == 1 else Struct(INNER).put("a", i).put("b", None))
    value.put("counted", None if i % 2 else i)
    return value


def converter(**config: Any) -> JsonConverter:
    out = JsonConverter()
    out.configure({"schemas.enable": True, **config}, is_key=False)
    return out


def record_path(conv: JsonConverter, data: list[bytes | None]) -> pa.RecordBatch:
    """What the record path makes of the same messages, as columns."""
    decoded = conv.to_connect_batch("t", [d for d in data if d])
    schema = decoded[0].schema
    return batch_from_values(schema, [d.value for d in decoded if d.value is not None])


@pytest.mark.parametrize("decimal_format", ["BASE64", "NUMERIC"])
def test_columns_are_the_record_paths_values(decimal_format: str) -> None:
    conv = converter(**{"decimal.format": decimal_format})
    data = conv.from_connect_batch("t", [WIDE] * 20, [wide(i) for i in range(20)])
    [(schema, batch, rows)] = conv.to_arrow("t", data)  # type: ignore[misc]
    assert schema == WIDE
    assert rows.tolist() == list(range(20))
    expected = record_path(conv, data)
    assert batch.schema == expected.schema
    assert batch.to_pylist() == expected.to_pylist()
    assert batch.column("counted").to_pylist()[:2] == [0, 7]  # a null took the default


def test_no_default_without_replace_null_with_default() -> None:
    conv = converter(**{"replace.null.with.default": False})
    data = conv.from_connect_batch("t", [WIDE] * 2, [wide(0), wide(1)])
    [(_, batch, _)] = conv.to_arrow("t", data)  # type: ignore[misc]
    assert batch.column("counted").to_pylist() == [0, None]
    assert batch.to_pylist() == record_path(conv, data).to_pylist()


def test_null_messages_and_payloads_are_in_no_run_and_schemas_split_runs() -> None:
    conv = converter()
    other = Schema.struct([("id", INT64_SCHEMA)], name="other", optional=True)
    a = conv.from_connect_batch("t", [WIDE] * 3, [wide(i) for i in range(3)])
    b = conv.from_connect_data("t", other, Struct(other).put("id", 9))
    null_payload = conv.from_connect_data("t", WIDE, None)
    data = [None, a[0], b"", a[1], null_payload, b, a[2], None]
    runs = conv.to_arrow("t", data)
    assert runs is not None
    assert [(s.name, r.tolist()) for s, _, r in runs] == [
        ("wide", [1, 3]),
        ("other", [5]),
        ("wide", [6]),
    ]
    assert runs[1][1].to_pylist() == [{"id": 9}]


def test_a_null_payload_of_a_required_schema_is_the_record_paths_error() -> None:
    conv = converter()
    required = Schema.struct([("id", INT64_SCHEMA)], name="req")
    data = conv.from_connect_batch("t", [required], [Struct(required).put("id", 1)])
    prefix = data[0][: data[0].index(b'"payload":') + 10]  # type: ignore[index]
    with pytest.raises(ConversionError, match="required"):
        conv.to_arrow("t", [*data, prefix + b"null}"])
    with pytest.raises(ConversionError):
        conv.to_connect_data("t", prefix + b"null}")


@pytest.mark.parametrize(
    "payload",
    [
        b'{"id":null}',  # a required field without a default
        b'{"other":1}',  # ... or missing
        b'{"id":"seven"}',  # not a number
        b'{"id":1',  # not JSON
        b"[1]",  # not an object
    ],
)
def test_bad_payloads_raise_conversion_errors(payload: bytes) -> None:
    conv = converter()
    schema = Schema.struct([("id", INT64_SCHEMA)], name="req")
    [good] = conv.from_connect_batch("t", [schema], [Struct(schema).put("id", 1)])
    assert good is not None
    prefix = good[: good.index(b'"payload":') + 10]
    with pytest.raises(ConversionError, match="'t'"):
        conv.to_arrow("t", [good, prefix + payload + b"}"])


def test_required_fields_inside_optional_structs_and_lists() -> None:
    conv = converter()
    inner = Schema.struct([("a", INT64_SCHEMA)], optional=True)
    schema = Schema.struct(
        [("s", inner), ("l", Schema(Type.ARRAY, value_schema=INT64_SCHEMA, optional=True))],
        name="nest",
    )
    prefix = conv.from_connect_data("t", schema, Struct(schema))
    assert prefix is not None
    prefix = prefix[: prefix.index(b'"payload":') + 10]
    fine = [
        prefix + json.dumps(p).encode() + b"}"
        for p in ({"s": None, "l": None}, {"s": {"a": 1}, "l": [1]})
    ]
    runs = conv.to_arrow("t", fine)
    assert runs is not None and runs[0][1].num_rows == 2
    for bad in ({"s": {"a": None}, "l": None}, {"s": None, "l": [1, None]}):
        with pytest.raises(ConversionError, match="required"):
            conv.to_arrow("t", [*fine, prefix + json.dumps(bad).encode() + b"}"])


@pytest.mark.parametrize(
    "schema",
    [
        Schema(Type.MAP, key_schema=STRING_SCHEMA, value_schema=INT64_SCHEMA),
        STRING_SCHEMA,
        Schema.struct(
            [("m", Schema(Type.MAP, key_schema=STRING_SCHEMA, value_schema=INT64_SCHEMA))]
        ),
        Schema.struct([("d", Schema(Type.ARRAY, value_schema=Date.schema()))]),
        Schema.struct([("s", Schema.struct([("x", OPTIONAL_INT64_SCHEMA.with_(default=1))]))]),
    ],
    ids=["map", "string", "struct-of-map", "array-of-dates", "nested-default"],
)
def test_what_columns_cannot_express_is_none(schema: Schema) -> None:
    envelope = b'{"schema":' + json.dumps(schema_to_json(schema), separators=(",", ":")).encode()
    assert converter().to_arrow("t", [envelope + b',"payload":{}}']) is None


def test_schemaless_messages_are_none() -> None:
    assert converter(**{"schemas.enable": False}).to_arrow("t", [b'{"id":1}']) is None
    assert converter().to_arrow("t", [b'{"id":1}']) is None  # no envelope
    assert converter().to_arrow("t", [b'{"schema":null,"payload":{"id":1}}']) is None


def test_positions_index_the_original_messages() -> None:
    conv = converter()
    data = conv.from_connect_batch("t", [WIDE] * 4, [wide(i) for i in range(4)])
    runs = conv.to_arrow("t", [None, None, *data])
    assert runs is not None
    [(_, batch, rows)] = runs
    assert rows.dtype == np.int64 and rows.tolist() == [2, 3, 4, 5]
    assert batch.column("i64").to_pylist() == [i << 40 for i in range(4)]


def test_bytes_like_messages_are_read_and_other_values_refused() -> None:
    conv = converter()
    data = conv.from_connect_batch("t", [WIDE] * 3, [wide(i) for i in range(3)])
    mixed = [bytearray(data[0] or b""), memoryview(data[1] or b""), data[2]]
    [(_, batch, rows)] = conv.to_arrow("t", mixed)  # type: ignore[misc]
    assert rows.tolist() == [0, 1, 2]
    assert batch.to_pylist() == record_path(conv, data).to_pylist()
    with pytest.raises(ConversionError, match="not str"):
        conv.to_arrow("t", [data[0], "text"])  # type: ignore[list-item]
