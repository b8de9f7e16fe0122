"""The plugin API: isolation from the runtime, data model, ConfigDef, records."""

from __future__ import annotations

import datetime as dt
import decimal
import subprocess
import sys

import pytest

from connect.api import (
    INT8_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigDef,
    ConfigError,
    ConfigType,
    Date,
    Decimal,
    Headers,
    Importance,
    Password,
    Schema,
    SchemaError,
    SinkRecord,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
    at_least,
    one_of,
)


def test_api_imports_nothing_of_the_runtime(subprocess_env) -> None:
    code = (
        "import sys, connect.api\n"
        "bad = [m for m in sys.modules if m == 'log' or m.startswith(('log.', 'connectors'))"
        " or (m.startswith('connect.') and not m.startswith('connect.api'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env, check=True
    ).stdout
    assert out.strip() == "[]"


def test_struct_validates_against_its_schema() -> None:
    schema = Schema.struct(
        [
            ("id", INT64_SCHEMA),
            ("name", OPTIONAL_STRING_SCHEMA),
            ("small", INT8_SCHEMA.with_(default=3)),
        ],
        name="row",
    )
    row = Struct(schema).put("id", 7)
    assert row.get("name") is None and row.get("small") == 3
    row.validate()
    with pytest.raises(SchemaError):
        row.put("id", "seven")
    with pytest.raises(SchemaError):
        row.put("small", 300)
    with pytest.raises(SchemaError):
        row.put("missing", 1)
    with pytest.raises(SchemaError):
        Struct(schema).validate()  # id is required
    assert row.to_dict() == {"id": 7, "name": None, "small": None}
    assert row == Struct(schema, {"id": 7})
    with pytest.raises(SchemaError, match="duplicate"):
        Schema.struct([("a", INT32_SCHEMA), ("a", INT32_SCHEMA)])


def test_nested_values() -> None:
    inner = Schema.struct([("x", INT32_SCHEMA)])
    schema = Schema.struct(
        [("items", Schema.array(inner)), ("tags", Schema.map(STRING_SCHEMA, INT32_SCHEMA))]
    )
    value = Struct(schema, {"items": [Struct(inner, {"x": 1})], "tags": {"a": 1}})
    assert value.to_dict() == {"items": [{"x": 1}], "tags": {"a": 1}}
    with pytest.raises(SchemaError):
        value.put("tags", {"a": "b"})


@pytest.mark.parametrize(
    ("cls", "schema", "value", "primitive"),
    [
        (Decimal, Decimal.schema(2), decimal.Decimal("-1.25"), b"\x83"),
        (Decimal, Decimal.schema(0), decimal.Decimal("128"), b"\x00\x80"),
        (Date, Date.schema(), dt.date(1970, 1, 11), 10),
        (Time, Time.schema(), dt.time(1, 0, 0, 5000), 3_600_005),
        (Timestamp, Timestamp.schema(), dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC), 1000),
    ],
)
def test_logical_types_round_trip(cls, schema, value, primitive) -> None:
    assert cls.from_logical(schema, value) == primitive
    assert cls.to_logical(schema, primitive) == value
    assert schema.name.startswith("org.apache.kafka.connect.data.")


def test_config_def_parse_and_validate() -> None:
    cdef = (
        ConfigDef()
        .define("file", ConfigType.STRING, documentation="the file")
        .define("batch.size", ConfigType.INT, 2000, at_least(1), Importance.LOW)
        .define("mode", ConfigType.STRING, "bulk", one_of("bulk", "incrementing"))
        .define("topics", ConfigType.LIST, "")
        .define("enabled", ConfigType.BOOLEAN, "false")
        .define("connection.password", ConfigType.PASSWORD, None)
    )
    parsed = cdef.parse(
        {
            "file": "/x",
            "batch.size": "10",
            "topics": "a, b",
            "connection.password": "s3cret",
            "enabled": "TRUE",
        }
    )
    assert parsed["batch.size"] == 10 and parsed["topics"] == ["a", "b"]
    assert parsed["enabled"] is True and parsed["mode"] == "bulk"
    assert isinstance(parsed["connection.password"], Password)
    assert str(parsed["connection.password"]) == "[hidden]"
    assert parsed["connection.password"].value == "s3cret"
    with pytest.raises(ConfigError) as info:
        cdef.parse({"batch.size": "10"})
    assert info.value.name == "file"
    with pytest.raises(ConfigError) as info:
        cdef.parse({"file": "/x", "batch.size": "0"})
    assert info.value.name == "batch.size" and "at least 1" in str(info.value)
    with pytest.raises(ConfigError) as info:
        cdef.parse({"file": "/x", "batch.size": "ten"})
    assert info.value.name == "batch.size"
    results = {r.name: r for r in cdef.validate({"mode": "weird", "connection.password": "pw"})}
    assert results["file"].errors and "file" in results["file"].errors[0]
    assert results["mode"].errors and not results["batch.size"].errors
    assert results["connection.password"].value == "[hidden]"
    assert "pw" not in repr(results)


def test_records_new_record_keeps_positions() -> None:
    headers = Headers().add("h", "v")
    source = SourceRecord(
        topic="t", value="x", source_partition={"f": 1}, source_offset={"p": 2}, headers=headers
    )
    copy = source.new_record(topic="u", value="y")
    assert (copy.topic, copy.value, copy.source_offset) == ("u", "y", {"p": 2})
    assert copy.headers == headers and copy.headers is not headers
    sink = SinkRecord(topic="t", kafka_partition=1, kafka_offset=5, value=1)
    moved = sink.new_record(topic="t2", kafka_partition=0)
    assert (moved.original_topic, moved.original_kafka_partition, moved.original_kafka_offset) == (
        "t",
        1,
        5,
    )
    assert moved.kafka_offset == 5
    assert moved.topic_partition == ("t", 1)


def test_source_record_batch_equals_records_built_one_by_one() -> None:
    from dataclasses import fields

    from connect.api import STRING_SCHEMA, SourceRecord

    partition = {"filename": "f"}
    offsets = [{"position": 3}, {"position": 7}]
    batch = SourceRecord.batch(
        "t",
        ["a", "b"],
        value_schema=STRING_SCHEMA,
        source_partition=partition,
        source_offsets=offsets,
    )
    single = [
        SourceRecord(
            topic="t",
            value_schema=STRING_SCHEMA,
            value=v,
            source_partition=partition,
            source_offset=o,
        )
        for v, o in zip(["a", "b"], offsets, strict=True)
    ]
    assert batch == single
    assert batch[0].headers is not batch[1].headers  # each record owns its headers
    for rec in batch:
        for f in fields(SourceRecord):  # a new field must be set by batch() too
            getattr(rec, f.name)
    assert SourceRecord.batch("t", ["x"])[0] == SourceRecord(topic="t", value="x")
