"""Connect schemas ⇄ Avro schemas, type by type, both ways, as Confluent's AvroData."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from fastavro import parse_schema

from connect.api.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Struct,
    Type,
)
from connect.api.errors import DataError
from connect.api.logical import Date, Decimal, Time, Timestamp
from connect.converters.avro.schema import to_avro
from connect.converters.avro.schema_read import to_connect


def back(avro: object) -> Schema:
    return to_connect(parse_schema(avro))


PRIMITIVES = [
    (INT8_SCHEMA, {"type": "int", "connect.type": "int8"}),
    (INT16_SCHEMA, {"type": "int", "connect.type": "int16"}),
    (INT32_SCHEMA, "int"),
    (INT64_SCHEMA, "long"),
    (FLOAT32_SCHEMA, "float"),
    (FLOAT64_SCHEMA, "double"),
    (BOOLEAN_SCHEMA, "boolean"),
    (STRING_SCHEMA, "string"),
    (BYTES_SCHEMA, "bytes"),
]


@pytest.mark.parametrize(("connect", "avro"), PRIMITIVES, ids=[str(c.type) for c, _ in PRIMITIVES])
def test_primitives_both_ways(connect: Schema, avro: object) -> None:
    assert to_avro(connect) == avro
    assert back(avro) == connect


@pytest.mark.parametrize(("connect", "avro"), PRIMITIVES, ids=[str(c.type) for c, _ in PRIMITIVES])
def test_optional_primitive_is_a_union_with_null_first(connect: Schema, avro: object) -> None:
    assert to_avro(connect.optional_()) == ["null", avro]
    assert back(["null", avro]) == connect.optional_()
    assert back([avro, "null"]) == connect.optional_()


def test_decimal_carries_scale_precision_and_connect_metadata() -> None:
    avro = to_avro(Decimal.schema(2))
    assert avro == {
        "type": "bytes",
        "scale": 2,
        "precision": 64,
        "connect.version": 1,
        "connect.parameters": {"scale": "2"},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }
    assert back(avro) == Decimal.schema(2)


def test_decimal_precision_parameter() -> None:
    schema = Decimal.schema(3, precision=10)
    avro = to_avro(schema)
    assert avro["precision"] == 10 and avro["scale"] == 3
    assert back(avro) == schema


def test_plain_avro_decimal_reads_as_connect_decimal() -> None:
    schema = back({"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 4})
    assert schema.name == Decimal.LOGICAL_NAME
    assert schema.parameters == {"scale": "4", "connect.decimal.precision": "9"}
    plain64 = back({"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 1})
    assert plain64 == Decimal.schema(1)


@pytest.mark.parametrize(
    ("connect", "base", "logical"),
    [
        (Date.schema(), "int", "date"),
        (Time.schema(), "int", "time-millis"),
        (Timestamp.schema(), "long", "timestamp-millis"),
    ],
)
def test_date_time_timestamp(connect: Schema, base: str, logical: str) -> None:
    avro = to_avro(connect)
    assert avro == {
        "type": base,
        "connect.version": 1,
        "connect.name": connect.name,
        "logicalType": logical,
    }
    assert back(avro) == connect
    assert back({"type": base, "logicalType": logical}) == connect


@pytest.mark.parametrize(
    "avro",
    [
        {"type": "long", "logicalType": "timestamp-micros"},
        {"type": "long", "logicalType": "time-micros"},
        {"type": "long", "logicalType": "local-timestamp-millis"},
    ],
)
def test_other_logical_types_read_as_their_base(avro: object) -> None:
    assert back(avro) == INT64_SCHEMA


def test_uuid_reads_as_string() -> None:
    assert back({"type": "string", "logicalType": "uuid"}) == STRING_SCHEMA


def test_array_and_string_keyed_map() -> None:
    array = Schema.array(OPTIONAL_INT32_SCHEMA)
    assert to_avro(array) == {"type": "array", "items": ["null", "int"]}
    assert back(to_avro(array)) == array
    mapping = Schema.map(STRING_SCHEMA, FLOAT64_SCHEMA)
    assert to_avro(mapping) == {"type": "map", "values": "double"}
    assert back(to_avro(mapping)) == mapping


def test_map_with_other_keys_is_an_array_of_map_entries() -> None:
    mapping = Schema.map(INT32_SCHEMA, STRING_SCHEMA)
    avro = to_avro(mapping)
    assert avro == {
        "type": "array",
        "items": {
            "type": "record",
            "name": "MapEntry",
            "namespace": "io.confluent.connect.avro",
            "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}],
        },
    }
    assert back(avro) == mapping
    optional_keys = Schema.map(OPTIONAL_STRING_SCHEMA, INT32_SCHEMA)
    assert to_avro(optional_keys)["type"] == "array"
    assert back(to_avro(optional_keys)) == optional_keys


def test_struct_named_and_default_named() -> None:
    named = Schema.struct([("a", INT32_SCHEMA)], name="com.acme.Thing", version=3, doc="d")
    avro = to_avro(named)
    assert avro == {
        "type": "record",
        "name": "Thing",
        "namespace": "com.acme",
        "fields": [{"name": "a", "type": "int"}],
        "connect.doc": "d",
        "connect.version": 3,
        "connect.name": "com.acme.Thing",
    }
    assert back(avro) == named
    unnamed = Schema.struct([("a", INT32_SCHEMA)])
    avro = to_avro(unnamed)
    assert (avro["name"], avro["namespace"]) == ("ConnectDefault", "io.confluent.connect.avro")
    assert "connect.name" not in avro
    assert back(avro) == unnamed


def test_plain_avro_record_takes_its_full_name() -> None:
    avro = {
        "type": "record",
        "name": "R",
        "namespace": "x.y",
        "fields": [{"name": "a", "type": "long"}],
    }
    assert back(avro) == Schema.struct([("a", INT64_SCHEMA)], name="x.y.R")


def test_optional_fields_get_null_defaults_and_defaults_order_the_union() -> None:
    schema = Schema.struct(
        [
            ("maybe", OPTIONAL_STRING_SCHEMA),
            ("count", INT32_SCHEMA.with_(default=7)),
            ("label", OPTIONAL_STRING_SCHEMA.with_(default="x")),
        ],
        name="r.S",
    )
    fields = to_avro(schema)["fields"]
    assert fields[0] == {"name": "maybe", "type": ["null", "string"], "default": None}
    assert fields[1] == {
        "name": "count",
        "type": {"type": "int", "connect.default": 7},
        "default": 7,
    }
    assert fields[2] == {
        "name": "label",
        "type": [{"type": "string", "connect.default": "x"}, "null"],
        "default": "x",
    }
    assert back(to_avro(schema)) == schema


def test_avro_field_defaults_become_connect_defaults_with_the_flag() -> None:
    avro = {
        "type": "record",
        "name": "r.S",
        "fields": [
            {"name": "n", "type": "int", "default": 5},
            {"name": "b", "type": "bytes", "default": "\u00ff"},
            {"name": "d", "type": {"type": "int", "logicalType": "date"}, "default": 1},
        ],
    }
    schema = back(avro)
    n, b, d = (f.schema for f in schema.fields)
    assert n.default == 5 and n.parameters == {"io.confluent.connect.avro.field.default": "true"}
    assert b.default == b"\xff"
    assert d.default == dt.date(1970, 1, 2)
    again = to_avro(schema)
    assert again["fields"][0]["default"] == 5
    assert "connect.default" not in str(again)


def test_logical_and_struct_defaults_written_as_avro_json() -> None:
    inner = Schema.struct([("a", INT32_SCHEMA)], name="r.In")
    schema = Schema.struct(
        [
            ("amount", Decimal.schema(2).with_(default=decimal.Decimal("1.00"))),
            (
                "when",
                Timestamp.schema().with_(default=dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)),
            ),
            ("inner", inner.with_(default=Struct(inner, {"a": 4}))),
        ],
        name="r.Out",
    )
    fields = to_avro(schema)["fields"]
    assert fields[0]["default"] == "d"  # 100 unscaled: one byte
    assert fields[1]["default"] == 1000
    assert fields[2]["default"] == {"a": 4}
    parse_schema(to_avro(schema))  # fastavro accepts the defaults
    assert back(to_avro(schema)) == schema


def test_parameters_and_avro_props() -> None:
    schema = STRING_SCHEMA.with_(parameters={"k": "v", "avro.java.string": "String"})
    avro = to_avro(schema)
    assert avro == {
        "type": "string",
        "connect.parameters": {"k": "v", "avro.java.string": "String"},
        "avro.java.string": "String",
    }
    assert back(avro) == schema


def test_docs_of_records_and_fields_round_trip() -> None:
    avro = {
        "type": "record",
        "name": "a.R",
        "doc": "the record",
        "fields": [{"name": "f", "type": "int", "doc": "the field"}],
    }
    schema = back(avro)
    assert schema.parameters == {
        "io.confluent.connect.avro.record.doc": "the record",
        "io.confluent.connect.avro.field.doc.f": "the field",
    }
    again = to_avro(schema)
    assert again["doc"] == "the record" and again["fields"][0]["doc"] == "the field"


def test_enum_reads_as_string_with_symbols_and_writes_back_when_enhanced() -> None:
    avro = {"type": "enum", "name": "a.Color", "symbols": ["RED", "GREEN"], "default": "RED"}
    schema = back(avro)
    assert schema.type is Type.STRING and schema.name == "a.Color"
    assert schema.parameters["io.confluent.connect.avro.Enum"] == "a.Color"
    assert schema.parameters["io.confluent.connect.avro.Enum.GREEN"] == "GREEN"
    assert to_avro(schema)["type"] == "string"
    enhanced = to_avro(schema, enhanced=True)
    assert enhanced["type"] == "enum" and enhanced["symbols"] == ["RED", "GREEN"]
    assert enhanced["default"] == "RED"


def test_fixed_reads_as_bytes_with_its_size() -> None:
    schema = back({"type": "fixed", "name": "a.F", "size": 4})
    assert schema.type is Type.BYTES and schema.parameters["connect.fixed.size"] == "4"
    assert to_avro(schema, enhanced=True)["type"] == "fixed"


def test_general_union_is_a_connect_union_struct() -> None:
    schema = back(["null", "int", "string"])
    assert schema.name == "io.confluent.connect.avro.Union" and schema.optional
    assert [f.name for f in schema.fields] == ["int", "string"]
    assert to_avro(schema) == ["null", "int", "string"]


def test_nested_unnamed_structs_get_distinct_names() -> None:
    a = Schema.struct([("x", INT32_SCHEMA)])
    b = Schema.struct([("y", STRING_SCHEMA)])
    outer = Schema.struct([("a", a), ("b", b), ("a2", a)])
    avro = to_avro(outer)
    parse_schema(avro)  # valid: no name defined twice
    names = [f["type"] if isinstance(f["type"], str) else f["type"]["name"] for f in avro["fields"]]
    assert names == [
        "ConnectDefault2",
        "ConnectDefault3",
        "io.confluent.connect.avro.ConnectDefault2",
    ]
    assert back(avro) == outer


def test_the_same_named_struct_twice_is_referenced_by_name() -> None:
    point = Schema.struct([("x", INT32_SCHEMA)], name="geo.Point")
    line = Schema.struct([("a", point), ("b", point.optional_())], name="geo.Line")
    avro = to_avro(line)
    assert avro["fields"][1]["type"] == ["null", "geo.Point"]
    assert back(avro) == line


def test_two_different_structs_with_one_name_are_refused() -> None:
    one = Schema.struct([("x", INT32_SCHEMA)], name="n.X")
    two = Schema.struct([("y", INT32_SCHEMA)], name="n.X")
    with pytest.raises(DataError, match=r"n.X"):
        to_avro(Schema.struct([("a", one), ("b", two)]))


def test_avro_errors() -> None:
    with pytest.raises(DataError, match="Standalone null"):
        back("null")
    with pytest.raises(DataError, match=r"connect.type"):
        back({"type": "int", "connect.type": "int64"})
    with pytest.raises(DataError, match="recursive"):
        back(
            {
                "type": "record",
                "name": "a.Node",
                "fields": [{"name": "next", "type": ["null", "a.Node"]}],
            }
        )
