"""JsonConverter: Kafka's exact bytes, round trips of every type, nulls, errors."""

from __future__ import annotations

import base64
import datetime as dt
import decimal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api import (
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
    ConfigError,
    DataError,
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    Struct,
    Time,
    Timestamp,
)
from connect.converters import ConversionError, JsonConverter


def make(**configs: object) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return converter


@pytest.fixture
def json() -> JsonConverter:
    return make()


# ------------------------------------------------------------- Kafka's exact bytes

ID_SCHEMA = Schema.struct([("id", INT32_SCHEMA)])


def test_struct_bytes_match_kafka(json: JsonConverter) -> None:
    data = json.from_connect_data("t", ID_SCHEMA, Struct(ID_SCHEMA, {"id": 1}))
    assert data == (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        b'"optional":false},"payload":{"id":1}}'
    )


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (BOOLEAN_SCHEMA, True, b'{"schema":{"type":"boolean","optional":false},"payload":true}'),
        (INT8_SCHEMA, 12, b'{"schema":{"type":"int8","optional":false},"payload":12}'),
        (INT16_SCHEMA, 12, b'{"schema":{"type":"int16","optional":false},"payload":12}'),
        (INT32_SCHEMA, 12, b'{"schema":{"type":"int32","optional":false},"payload":12}'),
        (
            INT64_SCHEMA,
            4398046511104,
            b'{"schema":{"type":"int64","optional":false},"payload":4398046511104}',
        ),
        (FLOAT32_SCHEMA, 12.34, b'{"schema":{"type":"float","optional":false},"payload":12.34}'),
        (FLOAT64_SCHEMA, 12.34, b'{"schema":{"type":"double","optional":false},"payload":12.34}'),
        (FLOAT64_SCHEMA, 1e10, b'{"schema":{"type":"double","optional":false},"payload":1.0E10}'),
        (
            FLOAT64_SCHEMA,
            -2.5e-7,
            b'{"schema":{"type":"double","optional":false},"payload":-2.5E-7}',
        ),
        (
            FLOAT64_SCHEMA,
            float("nan"),
            b'{"schema":{"type":"double","optional":false},"payload":"NaN"}',
        ),
        (
            STRING_SCHEMA,
            "foo-bar-baz",
            b'{"schema":{"type":"string","optional":false},"payload":"foo-bar-baz"}',
        ),
        (
            BYTES_SCHEMA,
            b"test-string",
            b'{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}',
        ),
        (
            OPTIONAL_STRING_SCHEMA,
            None,
            b'{"schema":{"type":"string","optional":true},"payload":null}',
        ),
        (
            Schema.array(INT32_SCHEMA),
            [1, 2, 3],
            b'{"schema":{"type":"array","items":{"type":'
            b'"int32","optional":false},"optional":false},"payload":[1,2,3]}',
        ),
        (
            Schema.map(STRING_SCHEMA, INT32_SCHEMA),
            {"key1": 12, "key2": 15},
            b'{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":'
            b'"int32","optional":false},"optional":false},"payload":{"key1":12,"key2":15}}',
        ),
        (
            Schema.map(INT32_SCHEMA, INT32_SCHEMA),
            {1: 12, 2: 15},
            b'{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":'
            b'"int32","optional":false},"optional":false},"payload":[[1,12],[2,15]]}',
        ),
        (
            Decimal.schema(2),
            decimal.Decimal("1.56"),
            b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.'
            b'Decimal","version":1,"parameters":{"scale":"2"}},"payload":"AJw="}',
        ),
        (
            Date.schema(),
            dt.date(1970, 1, 11),
            b'{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.'
            b'Date","version":1},"payload":10}',
        ),
        (
            Time.schema(),
            dt.time(0, 0, 14, 400_000),
            b'{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.'
            b'Time","version":1},"payload":14400}',
        ),
        (
            Timestamp.schema(),
            dt.datetime(2017, 3, 14, 16, 50, 15, 123000, tzinfo=dt.UTC),
            b'{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.'
            b'Timestamp","version":1},"payload":1489510215123}',
        ),
    ],
)
def test_bytes_match_kafka(json: JsonConverter, schema: Schema, value: object, expected: bytes):
    assert json.from_connect_data("t", schema, value) == expected
    assert json.from_connect_batch("t", [schema, schema], [value, value]) == [expected] * 2


def test_decimal_numeric_bytes_match_kafka() -> None:
    json = make(decimal_format="NUMERIC")
    schema = Decimal.schema(2)
    assert json.from_connect_data("t", schema, decimal.Decimal("1.56")) == (
        b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.'
        b'Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.56}'
    )
    # BigDecimal.toString keeps the scale: 0 at scale 2 is 0.00, and tiny ones use E.
    assert json.from_connect_data("t", schema, decimal.Decimal(0)).endswith(b'"payload":0.00}')
    small = Decimal.schema(8)
    assert json.from_connect_data("t", small, decimal.Decimal("1E-8")).endswith(b":1E-8}")


def test_schema_attributes_in_kafka_order(json: JsonConverter) -> None:
    schema = Schema(
        INT32_SCHEMA.type,
        optional=True,
        default=42,
        name="my.int",
        version=3,
        doc="the answer",
        parameters={"b": "2", "a": "1"},
    )
    data = json.from_connect_data("t", schema, None)
    assert data == (
        b'{"schema":{"type":"int32","optional":true,"name":"my.int","version":3,"doc":'
        b'"the answer","parameters":{"b":"2","a":"1"},"default":42},"payload":42}'
    )


def test_nested_struct_with_default_field(json: JsonConverter) -> None:
    inner = Schema.struct([("x", Schema(INT32_SCHEMA.type, default=7))], name="In", optional=True)
    outer = Schema.struct([("in", inner), ("s", OPTIONAL_STRING_SCHEMA)], name="Out")
    value = Struct(outer, {"in": Struct(inner, {}), "s": None})
    assert json.from_connect_data("t", outer, value) == (
        b'{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32",'
        b'"optional":false,"default":7,"field":"x"}],"optional":true,"name":"In","field":"in"},'
        b'{"type":"string","optional":true,"field":"s"}],"optional":false,"name":"Out"},'
        b'"payload":{"in":{"x":7},"s":null}}'
    )


def test_replace_null_with_default_off() -> None:
    json = make(replace_null_with_default="false")
    schema = Schema(INT32_SCHEMA.type, optional=True, default=42)
    assert json.from_connect_data("t", schema, None).endswith(b'"payload":null}')
    assert json.to_connect_data("t", json.from_connect_data("t", schema, None)).value is None
    assert make().to_connect_data("t", json.from_connect_data("t", schema, None)).value == 42


def test_schemaless_writes_plain_json() -> None:
    json = make(schemas_enable="false")
    value = {"a": 1, "b": [True, None, "x"], "c": {"d": 1.5}, "e": b"\x00\x01"}
    assert json.from_connect_data("t", None, value) == (
        b'{"a":1,"b":[true,null,"x"],"c":{"d":1.5},"e":"AAE="}'
    )
    assert json.from_connect_data("t", INT32_SCHEMA, 5) == b"5"
    # Kafka writes a map with non-string keys as [key, value] pairs.
    assert json.from_connect_data("t", None, {1: "a", 2: "b"}) == b'[[1,"a"],[2,"b"]]'
    assert json.from_connect_batch("t", [None, None], [{1: "a"}, "x"]) == [b'[[1,"a"]]', b'"x"']


def test_schemaless_value_in_envelope(json: JsonConverter) -> None:
    assert json.from_connect_data("t", None, {"a": 1}) == b'{"schema":null,"payload":{"a":1}}'
    assert json.to_connect_data("t", b'{"schema":null,"payload":{"a":1}}') == (None, {"a": 1})


# ----------------------------------------------------------------------- reading


def test_reads_kafka_bytes(json: JsonConverter) -> None:
    data = (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
        b'{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"r"},'
        b'"payload":{"id":1,"name":"x"}}'
    )
    schema, value = json.to_connect_data("t", data)
    assert schema == Schema.struct(
        [("id", INT32_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)], name="r"
    )
    assert value == Struct(schema, {"id": 1, "name": "x"})
    assert json.to_connect_data("t", data) == (schema, value)  # the learned fast path


def test_reads_pretty_printed_envelope_and_reordered_keys(json: JsonConverter) -> None:
    data = b'{ "payload": 5,\n  "schema": {"optional": false, "type": "int64"} }\n'
    assert json.to_connect_data("t", data) == (INT64_SCHEMA, 5)


def test_schemaless_read_infers_plain_values() -> None:
    json = make(schemas_enable=False)
    assert json.to_connect_data("t", b'{"a":[1,2.5,"x",null,true]}') == (
        None,
        {"a": [1, 2.5, "x", None, True]},
    )
    # An envelope is just JSON when schemas are off.
    assert json.to_connect_data("t", b'{"schema":null,"payload":1}') == (
        None,
        {"schema": None, "payload": 1},
    )
    assert json.to_connect_batch("t", [b"1", b'"a"', None]) == [
        (None, 1),
        (None, "a"),
        (None, None),
    ]


def test_decimal_reads_base64_and_numbers_exactly(json: JsonConverter) -> None:
    head = (
        b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.'
        b'Decimal","version":1,"parameters":{"scale":"2"}},"payload":'
    )
    assert json.to_connect_data("t", head + b'"AJw="}').value == decimal.Decimal("1.56")
    assert json.to_connect_data("t", head + b"1.56}").value == decimal.Decimal("1.56")
    big = b"123456789012345678901234.56"
    assert json.to_connect_data("t", head + big + b"}").value == decimal.Decimal(big.decode())
    assert json.to_connect_data("t", head + b"3}").value == decimal.Decimal("3.00")


# --------------------------------------------------------------------- round trips

ALL = Schema.struct(
    [
        ("i8", INT8_SCHEMA),
        ("i16", INT16_SCHEMA),
        ("i32", INT32_SCHEMA),
        ("i64", INT64_SCHEMA),
        ("f32", FLOAT32_SCHEMA),
        ("f64", FLOAT64_SCHEMA),
        ("b", BOOLEAN_SCHEMA),
        ("s", STRING_SCHEMA),
        ("raw", BYTES_SCHEMA),
        ("arr", Schema.array(OPTIONAL_STRING_SCHEMA)),
        ("smap", Schema.map(STRING_SCHEMA, Schema.array(INT32_SCHEMA))),
        ("imap", Schema.map(INT64_SCHEMA, OPTIONAL_STRING_SCHEMA, optional=True)),
        ("dec", Decimal.schema(3)),
        ("date", Date.schema()),
        ("time", Time.schema()),
        ("ts", Timestamp.schema(optional=True)),
        ("opt", OPTIONAL_INT32_SCHEMA),
        ("nested", Schema.struct([("x", STRING_SCHEMA)], name="N", optional=True)),
    ],
    name="com.example.All",
    version=2,
    doc="every type",
)


def all_value() -> Struct:
    nested = ALL.field("nested")
    assert nested is not None
    return Struct(
        ALL,
        {
            "i8": -128,
            "i16": 32767,
            "i32": -(2**31),
            "i64": 2**63 - 1,
            "f32": 1.5,
            "f64": -1.25e300,
            "b": False,
            "s": 'héllo "quoted" \\ \n ☃',
            "raw": bytes(range(256)),
            "arr": ["a", None, ""],
            "smap": {"k": [1, 2], "": []},
            "imap": {1: "one", -2: None},
            "dec": decimal.Decimal("-12345.678"),
            "date": dt.date(2024, 2, 29),
            "time": dt.time(23, 59, 59, 999000),
            "ts": dt.datetime(1969, 7, 20, 20, 17, 40, 1000, tzinfo=dt.UTC),
            "opt": None,
            "nested": Struct(nested.schema, {"x": "y"}),
        },
    )


@pytest.mark.parametrize("decimal_format", ["BASE64", "NUMERIC"])
@pytest.mark.parametrize("schemas_enable", [True, False])
def test_round_trip_every_type(decimal_format: str, schemas_enable: bool) -> None:
    json = make(decimal_format=decimal_format)
    value = all_value()
    data = json.from_connect_data("t", ALL, value)
    assert json.to_connect_data("t", data) == (ALL, value)
    assert json.to_connect_batch("t", [data, data]) == [(ALL, value)] * 2
    if not schemas_enable:
        plain = make(decimal_format=decimal_format, schemas_enable=False)
        assert (
            orjson.loads(plain.from_connect_data("t", ALL, value)) == orjson.loads(data)["payload"]
        )


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (INT8_SCHEMA, 1),
        (Schema.array(Schema.map(STRING_SCHEMA, BOOLEAN_SCHEMA)), [{"a": True}]),
        (Decimal.schema(0, optional=True), None),
        (Schema(STRING_SCHEMA.type, default="dflt", doc="d", parameters={"k": "v"}), None),
        (Schema.struct([("a", Schema.array(INT8_SCHEMA, default=[1, 2]))], optional=True), None),
    ],
)
def test_schema_round_trip(json: JsonConverter, schema: Schema, value: object) -> None:
    data = json.from_connect_data("t", schema, value)
    assert json.to_connect_data("t", data) == (
        schema,
        value if value is not None else schema.default,
    )


def test_struct_map_keys_round_trip(json: JsonConverter) -> None:
    key_schema = Schema.struct([("a", INT32_SCHEMA)])
    schema = Schema.map(key_schema, STRING_SCHEMA)
    value = {Struct(key_schema, {"a": 1}): "one"}
    assert json.to_connect_data("t", json.from_connect_data("t", schema, value)) == (
        schema,
        value,
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_hypothesis_schemaless_round_trip(value: object) -> None:
    json = make(schemas_enable=False)
    data = json.from_connect_data("t", None, value)
    if value is None:
        assert data is None
    else:
        assert json.to_connect_data("t", data) == (None, value)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**31), 2**31 - 1),
            st.one_of(st.none(), st.text()),
            st.floats(allow_nan=False),
            st.binary(max_size=20),
            st.decimals(places=2, min_value=-(10**12), max_value=10**12),
        ),
        max_size=5,
    ),
    st.sampled_from(["BASE64", "NUMERIC"]),
)
def test_hypothesis_struct_round_trip(rows: list[tuple], decimal_format: str) -> None:
    schema = Schema.struct(
        [
            ("i", INT32_SCHEMA),
            ("s", OPTIONAL_STRING_SCHEMA),
            ("f", FLOAT64_SCHEMA),
            ("b", BYTES_SCHEMA),
            ("d", Decimal.schema(2)),
        ]
    )
    json = make(decimal_format=decimal_format)
    values = [Struct(schema, dict(zip("isfbd", row, strict=True))) for row in rows]
    data = json.from_connect_batch("t", [schema] * len(values), values)
    assert [sv.value for sv in json.to_connect_batch("t", data)] == values
    assert [json.to_connect_data("t", d).value for d in data] == values


# ----------------------------------------------------------------------- nulls


def test_nulls_and_tombstones(json: JsonConverter) -> None:
    assert json.from_connect_data("t", None, None) is None
    assert json.to_connect_data("t", None) == SchemaAndValue(None, None)
    assert json.to_connect_data("t", b"") == (None, None)
    assert json.to_connect_data("t", b'{"schema":null,"payload":null}') == (None, None)
    assert json.from_connect_batch("t", [None, STRING_SCHEMA], [None, "a"])[0] is None
    assert json.to_connect_batch("t", [None, b'{"schema":null,"payload":null}']) == [
        (None, None),
        (None, None),
    ]
    plain = make(schemas_enable=False)
    assert plain.from_connect_data("t", OPTIONAL_STRING_SCHEMA, None) == b"null"
    assert plain.to_connect_data("t", b"null") == (None, None)


def test_null_for_required_field_is_an_error(json: JsonConverter) -> None:
    with pytest.raises(ConversionError, match=r"'orders'.*required"):
        json.from_connect_data("orders", STRING_SCHEMA, None)
    with pytest.raises(ConversionError, match=r"'orders'.*required"):
        json.to_connect_data("orders", b'{"schema":{"type":"string"},"payload":null}')


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"{not json", "malformed JSON"),
        (b'{"a":1}', 'requires "schema" and "payload"'),
        (b'{"schema":null,"payload":1,"extra":2}', 'requires "schema" and "payload"'),
        (b"42", "schemas.enable=false"),
        (b'{"schema":{"type":"int8"},"payload":300}', "out of range for int8"),
        (b'{"schema":{"type":"int32"},"payload":"1"}', "int32 expects an integer"),
        (b'{"schema":{"type":"nope"},"payload":1}', "unknown schema type"),
        (b'{"schema":{"optional":true},"payload":1}', "'type'"),
        (b'{"schema":{"type":"bytes"},"payload":"***"}', "base64"),
        (
            b'{"schema":{"type":"struct","fields":[{"type":"int32","field":"id"}]},'
            b'"payload":{"id":"x"}}',
            r"id: int32",
        ),
        (b'{"schema":{"type":"struct","fields":[{"type":"int32"}]},"payload":{}}', "field name"),
    ],
)
def test_read_errors_name_the_topic(json: JsonConverter, data: bytes, match: str) -> None:
    with pytest.raises(ConversionError, match=match) as info:
        json.to_connect_data("orders", data)
    assert isinstance(info.value, DataError)
    assert info.value.topic == "orders"
    assert "'orders'" in str(info.value)
    with pytest.raises(ConversionError, match=match):
        json.to_connect_batch("orders", [data])


@pytest.mark.parametrize(
    ("schema", "value", "match"),
    [
        (INT8_SCHEMA, 128, "out of range"),
        (INT32_SCHEMA, "1", "int32 expects an int"),
        (INT32_SCHEMA, True, "int32 expects an int"),
        (STRING_SCHEMA, 1, "string expects a str"),
        (BOOLEAN_SCHEMA, 1, "boolean expects a bool"),
        (BYTES_SCHEMA, "x", "bytes expects bytes"),
        (ID_SCHEMA, {"id": 1}, "struct expects a Struct"),
        (Schema.struct([("id", INT64_SCHEMA)]), Struct(ID_SCHEMA, {"id": 1}), "mismatching"),
        (Decimal.schema(1), decimal.Decimal("1.25"), "decimal places"),
        (Date.schema(), dt.datetime(2020, 1, 1), "expects a date"),
        (None, dt.datetime(2020, 1, 1), "does not have a corresponding schema type"),
        (None, 2**64, "out of range for int64"),
        (Schema.array(INT32_SCHEMA), [1, None], r"\[\]: null value"),
    ],
)
def test_write_errors_name_the_topic(schema: Schema, value: object, match: str) -> None:
    json = make()
    with pytest.raises(ConversionError, match=match) as info:
        json.from_connect_data("orders", schema, value)
    assert "'orders'" in str(info.value) and info.value.direction == "to_bytes"
    with pytest.raises(ConversionError, match=match):
        json.from_connect_batch("orders", [schema] * 2, [value, value])


def test_nested_error_names_the_field(json: JsonConverter) -> None:
    inner = Schema.struct([("n", INT8_SCHEMA)])
    outer = Schema.struct([("a", Schema.array(inner))])
    data = json.from_connect_data(
        "t", outer, Struct(outer, {"a": [Struct(inner, {"n": 1})]})
    ).replace(b'"n":1', b'"n":1000')
    with pytest.raises(ConversionError, match=r"a\[\]\.n: 1000 is out of range for int8"):
        json.to_connect_data("t", data)


# --------------------------------------------------------------- config, headers


def test_config_declares_kafka_keys() -> None:
    names = JsonConverter().config().names()
    assert names == [
        "schemas.enable",
        "schemas.cache.size",
        "decimal.format",
        "replace.null.with.default",
        "converter.type",
    ]
    with pytest.raises(ConfigError, match=r"decimal\.format"):
        make(decimal_format="HEX")


def test_decimal_format_is_case_insensitive() -> None:
    assert make(decimal_format="numeric").numeric_decimals


def test_converter_type() -> None:
    json = JsonConverter()
    json.configure({}, True)
    assert json.converter_type == "key"
    json.configure({})
    assert json.converter_type == "header"
    json.configure({"converter.type": "value"})
    assert json.converter_type == "value"


def test_as_header_converter() -> None:
    json = JsonConverter()
    json.configure({"schemas.enable": "false"})
    assert json.from_connect_header("t", "h", INT32_SCHEMA, 5) == b"5"
    assert json.to_connect_header("t", "h", b"[1,2]") == (None, [1, 2])


def test_schema_cache_is_bounded() -> None:
    json = make(schemas_cache_size=2)
    for i in range(5):
        schema = Schema(INT32_SCHEMA.type, name=f"n{i}")
        data = json.from_connect_data("t", schema, i)
        assert json.to_connect_data("t", data) == (schema, i)
    assert len(json._writers) <= 2 and len(json._schemas_by_json) <= 2


def test_bytearray_and_memoryview_input(json: JsonConverter) -> None:
    data = json.from_connect_data("t", STRING_SCHEMA, "x")
    assert json.to_connect_data("t", bytearray(data)) == (STRING_SCHEMA, "x")
    assert json.to_connect_data("t", memoryview(data)) == (STRING_SCHEMA, "x")
    assert (
        base64.b64decode(
            orjson.loads(json.from_connect_data("t", BYTES_SCHEMA, memoryview(b"ab")))["payload"]
        )
        == b"ab"
    )
