"""AvroConverter: wire format, value round trips, errors, subject names and caching."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from io import BytesIO

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

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
)
from connect.api.errors import ConfigError, DataError, RetriableError
from connect.api.logical import Date, Decimal, Time, Timestamp
from connect.converters.avro import (
    AvroConverter,
    MemorySchemaRegistryClient,
    RegistryUnavailableError,
    to_avro,
)
from connect.converters.avro.client import drop_mock_registry, mock_registry
from connect.converters.errors import ConversionError

INNER = Schema.struct([("a", INT32_SCHEMA), ("b", OPTIONAL_STRING_SCHEMA)], name="com.acme.Inner")
ORDER = Schema.struct(
    [
        ("id", INT32_SCHEMA),
        ("tiny", INT8_SCHEMA),
        ("small", INT16_SCHEMA),
        ("seq", INT64_SCHEMA),
        ("ratio", FLOAT32_SCHEMA),
        ("score", FLOAT64_SCHEMA),
        ("ok", BOOLEAN_SCHEMA),
        ("name", STRING_SCHEMA),
        ("blob", BYTES_SCHEMA),
        ("note", OPTIONAL_STRING_SCHEMA),
        ("count", INT32_SCHEMA.with_(default=3)),
        ("day", Date.schema()),
        ("at", Time.schema()),
        ("ts", Timestamp.schema()),
        ("amount", Decimal.schema(2)),
        ("inner", INNER),
        ("maybe_inner", INNER.optional_()),
        ("tags", Schema.array(STRING_SCHEMA)),
        ("attrs", Schema.map(STRING_SCHEMA, OPTIONAL_INT32_SCHEMA)),
        ("by_id", Schema.map(INT32_SCHEMA, INNER)),
    ],
    name="com.acme.Order",
)


def order(i: int = 1) -> Struct:
    return Struct(
        ORDER,
        {
            "id": i,
            "tiny": -3,
            "small": 300,
            "seq": 2**40 + i,
            "ratio": 0.5,
            "score": i / 4,
            "ok": i % 2 == 0,
            "name": f"order-{i}",
            "blob": b"\x00\xff",
            "note": None if i % 2 else "even",
            "day": dt.date(2024, 2, 29),
            "at": dt.time(13, 14, 15, 16000),
            "ts": dt.datetime(2024, 1, 1, 12, 0, 0, 123000, tzinfo=dt.UTC),
            "amount": decimal.Decimal("-12.34"),
            "inner": Struct(INNER, {"a": i, "b": "x"}),
            "maybe_inner": None,
            "tags": ["a", "b"],
            "attrs": {"k": 1, "n": None},
            "by_id": {7: Struct(INNER, {"a": 7})},
        },
    )


def converter(
    client: MemorySchemaRegistryClient | None = None, *, is_key: bool = False, **configs: object
) -> AvroConverter:
    c = AvroConverter(client if client is not None else MemorySchemaRegistryClient())
    c.configure(configs, is_key)
    return c


def test_round_trip_of_every_type() -> None:
    c = converter()
    data = c.from_connect_data("orders", ORDER, order())
    schema, value = c.to_connect_data("orders", data)
    assert schema == ORDER
    # An unset field with a default is written as its default, as Struct.get reads it.
    assert value.to_dict() == order().to_dict() | {"count": 3}


def test_batch_paths_match_the_single_record_paths() -> None:
    c = converter()
    records = [order(i) for i in range(50)]
    batch = c.from_connect_batch("orders", [ORDER] * 50, records)
    assert batch == [c.from_connect_data("orders", ORDER, r) for r in records]
    decoded = c.to_connect_batch("orders", batch)
    assert [sv.value.to_dict() for sv in decoded] == [
        sv.value.to_dict() for sv in (c.to_connect_data("orders", d) for d in batch)
    ]
    assert all(sv.schema == ORDER for sv in decoded)


def test_wire_format_bytes_are_exact() -> None:
    client = MemorySchemaRegistryClient()
    client.register("other-value", '"long"')  # id 1 is taken
    schema = Schema.struct([("n", STRING_SCHEMA)], name="x.V")
    data = converter(client).from_connect_data("t", schema, Struct(schema, {"n": "a"}))
    assert data == b"\x00" + struct.pack(">I", 2) + b"\x02a"


def test_payload_is_plain_avro_of_the_registered_schema() -> None:
    client = MemorySchemaRegistryClient()
    c = converter(client)
    data = c.from_connect_data("orders", ORDER, order())
    schema_id = struct.unpack(">I", data[1:5])[0]
    registered = parse_schema(__import__("json").loads(client.get_schema(schema_id)))
    datum = schemaless_reader(BytesIO(data[5:]), registered, None)
    assert datum["name"] == "order-1" and datum["by_id"] == [
        {"key": 7, "value": {"a": 7, "b": None}}
    ]


def test_primitive_values_and_raw_bytes() -> None:
    c = converter()
    for schema, value in [
        (STRING_SCHEMA, "hello"),
        (INT64_SCHEMA, -5),
        (OPTIONAL_INT32_SCHEMA, 9),
        (Decimal.schema(3), decimal.Decimal("1.500")),
    ]:
        data = c.from_connect_data("t", schema, value)
        assert c.to_connect_data("t", data) == (schema, value)
    raw = c.from_connect_data("t", BYTES_SCHEMA, b"\x01\x02")
    assert raw[5:] == b"\x01\x02"  # no Avro length prefix for a plain bytes schema
    assert c.to_connect_data("t", raw) == (BYTES_SCHEMA, b"\x01\x02")


def test_nulls_are_tombstones() -> None:
    c = converter()
    assert c.from_connect_data("t", ORDER, None) is None
    assert c.to_connect_data("t", None) == (None, None)
    assert c.from_connect_batch("t", [ORDER, ORDER], [order(), None])[1] is None


def test_an_optional_union_value_null_round_trips() -> None:
    c = converter()
    schema = Schema.struct([("n", OPTIONAL_STRING_SCHEMA)], name="x.Opt")
    data = c.from_connect_data("t", schema, Struct(schema, {}))
    assert c.to_connect_data("t", data).value.get("n") is None


# --------------------------------------------------------------------------- errors


def test_bad_magic_byte() -> None:
    c = converter()
    data = c.from_connect_data("t", STRING_SCHEMA, "x")
    with pytest.raises(ConversionError, match="magic byte 1") as info:
        c.to_connect_data("t", b"\x01" + data[1:])
    assert isinstance(info.value, DataError) and info.value.topic == "t"


def test_too_short() -> None:
    with pytest.raises(ConversionError, match="too short"):
        converter().to_connect_data("t", b"\x00\x00\x01")
    with pytest.raises(ConversionError, match="too short"):
        converter().to_connect_batch("t", [b""])


def test_unknown_schema_id() -> None:
    with pytest.raises(ConversionError, match="unknown schema id 42"):
        converter().to_connect_data("t", b"\x00" + struct.pack(">I", 42) + b"\x02a")


def test_undecodable_payload() -> None:
    c = converter()
    good = c.from_connect_data("t", ORDER, order())
    with pytest.raises(ConversionError, match="cannot decode"):
        c.to_connect_data("t", good[:12])
    with pytest.raises(ConversionError, match="cannot decode"):
        c.to_connect_batch("t", [good, good[:12], good])


def test_batch_with_a_truncated_message_is_not_misread() -> None:
    c = converter()
    schema = Schema.struct([("n", STRING_SCHEMA)], name="x.V")
    msgs = c.from_connect_batch("t", [schema] * 3, [Struct(schema, {"n": s}) for s in "abc"])
    # A trailing byte shifts every later message in the joined batch: the batch read
    # must notice and fall back (a message's trailing bytes are ignored, as Confluent's).
    decoded = c.to_connect_batch("t", [msgs[0], msgs[1] + b"\x00", msgs[2]])
    assert [sv.value.get("n") for sv in decoded] == ["a", "b", "c"]


def test_value_that_does_not_fit() -> None:
    c = converter()
    with pytest.raises(ConversionError, match="Struct"):
        c.from_connect_data("t", ORDER, {"id": 1})
    with pytest.raises(ConversionError):
        c.from_connect_data("t", INT32_SCHEMA, "not a number")
    with pytest.raises(ConversionError, match="needs a schema"):
        c.from_connect_data("t", None, "schemaless")


def test_unreachable_registry_is_retriable() -> None:
    c = AvroConverter()
    c.configure({"schema.registry.url": "http://127.0.0.1:9"}, False)
    with pytest.raises(RegistryUnavailableError) as info:
        c.from_connect_data("t", STRING_SCHEMA, "x")
    assert isinstance(info.value, RetriableError)


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"schema.registry.url"):
        AvroConverter().configure({}, False)
    with pytest.raises(ConfigError, match="embedded"):
        AvroConverter().configure({"schema.registry.url": "embedded"}, False)
    with pytest.raises(ConfigError, match=r"use.latest.version"):
        converter(**{"use.latest.version": "true"})
    with pytest.raises(ConfigError, match=r"value.subject.name.strategy"):
        converter(**{"value.subject.name.strategy": "Nope"})
    with pytest.raises(ConfigError, match=r"basic.auth.user.info"):
        AvroConverter().configure(
            {"schema.registry.url": "http://h", "basic.auth.credentials.source": "USER_INFO"},
            False,
        )


# ------------------------------------------------------------------ subjects, caching


@pytest.mark.parametrize(
    ("strategy", "is_key", "subject"),
    [
        ("TopicNameStrategy", False, "orders-value"),
        ("TopicNameStrategy", True, "orders-key"),
        ("io.confluent.kafka.serializers.subject.TopicNameStrategy", False, "orders-value"),
        ("RecordNameStrategy", False, "com.acme.Order"),
        ("io.confluent.kafka.serializers.subject.RecordNameStrategy", True, "com.acme.Order"),
        ("TopicRecordNameStrategy", False, "orders-com.acme.Order"),
        (
            "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy",
            True,
            "orders-com.acme.Order",
        ),
        ("TOPIC_RECORD", False, "orders-com.acme.Order"),
    ],
)
def test_subject_name_strategies(strategy: str, is_key: bool, subject: str) -> None:
    client = MemorySchemaRegistryClient()
    key = "key.subject.name.strategy" if is_key else "value.subject.name.strategy"
    c = converter(client, is_key=is_key, **{key: strategy})
    c.from_connect_data("orders", ORDER, order())
    assert client.latest(subject).schema == __import__("orjson").dumps(to_avro(ORDER)).decode()


def test_record_strategies_refuse_non_records() -> None:
    c = converter(**{"value.subject.name.strategy": "RecordNameStrategy"})
    with pytest.raises(ConversionError, match="RecordNameStrategy"):
        c.from_connect_data("t", STRING_SCHEMA, "x")


def test_one_registration_per_distinct_schema_and_no_call_per_record() -> None:
    client = MemorySchemaRegistryClient()
    c = converter(client)
    records = [order(i) for i in range(100)]
    batch = c.from_connect_batch("orders", [ORDER] * 100, records)
    for r in records:
        c.from_connect_data("orders", ORDER, r)
    equal_copy = ORDER.with_()  # an equal schema, a new object
    c.from_connect_data(
        "orders",
        equal_copy,
        Struct(
            equal_copy,
            order().to_dict()
            | {
                "inner": Struct(INNER, {"a": 1}),
                "maybe_inner": None,
                "by_id": {7: Struct(INNER, {"a": 7})},
            },
        ),
    )
    other = Schema.struct([("n", STRING_SCHEMA)], name="x.Other")
    c.from_connect_data("orders", other, Struct(other, {"n": "a"}))
    c.to_connect_batch("orders", batch)
    for d in batch:
        c.to_connect_data("orders", d)
    assert client.calls == {"register": 2}  # ids read back came from the cache too
    fresh = converter(client)
    fresh.to_connect_batch("orders", batch)
    fresh.to_connect_batch("orders", batch)
    assert client.calls["get_schema"] == 1


def test_same_schema_on_two_topics_shares_one_id() -> None:
    client = MemorySchemaRegistryClient()
    c = converter(client)
    a = c.from_connect_data("a", STRING_SCHEMA, "x")
    b = c.from_connect_data("b", STRING_SCHEMA, "x")
    assert a[:5] == b[:5] and client.calls["register"] == 2


def test_auto_register_off_looks_the_schema_up() -> None:
    client = MemorySchemaRegistryClient()
    c = converter(client, **{"auto.register.schemas": "false"})
    with pytest.raises(ConversionError, match="not found"):
        c.from_connect_data("t", STRING_SCHEMA, "x")
    schema_id = client.register(
        "t-value", '{"type":"string"}'.replace('{"type":"string"}', '"string"')
    )
    assert c.from_connect_data("t", STRING_SCHEMA, "x")[1:5] == struct.pack(">I", schema_id)
    assert client.calls["lookup"] == 2


def test_use_latest_version_writes_with_the_latest_schema() -> None:
    client = MemorySchemaRegistryClient()
    v1 = Schema.struct([("a", INT32_SCHEMA)], name="x.R")
    v2 = Schema.struct([("a", INT32_SCHEMA), ("b", STRING_SCHEMA.with_(default="d"))], name="x.R")
    converter(client).from_connect_data("t", v1, Struct(v1, {"a": 1}))
    latest_id = converter(client).from_connect_data("t", v2, Struct(v2, {"a": 1, "b": "z"}))[1:5]
    c = converter(
        client,
        **{
            "auto.register.schemas": "false",
            "use.latest.version": "true",
            "latest.compatibility.strict": "false",
        },
    )
    data = c.from_connect_data("t", v2, Struct(v2, {"a": 5, "b": "q"}))
    assert data[1:5] == latest_id
    assert c.to_connect_data("t", data).value.to_dict() == {"a": 5, "b": "q"}
    assert client.calls["latest"] == 1


def test_mock_urls_share_a_registry_per_scope() -> None:
    try:
        writer, reader = AvroConverter(), AvroConverter()
        writer.configure({"schema.registry.url": "mock://scope-a"}, False)
        reader.configure({"schema.registry.url": "mock://scope-a"}, False)
        data = writer.from_connect_data("t", ORDER, order())
        assert reader.to_connect_data("t", data).value.get("name") == "order-1"
        assert mock_registry("scope-a").calls["register"] == 1
    finally:
        drop_mock_registry("scope-a")


def test_batch_of_mixed_schemas_goes_record_by_record() -> None:
    c = converter()
    out = c.from_connect_batch("t", [STRING_SCHEMA, INT64_SCHEMA], ["a", 5])
    assert [c.to_connect_data("t", d).value for d in out] == ["a", 5]
    assert [sv.value for sv in c.to_connect_batch("t", out)] == ["a", 5]


def test_reads_what_fastavro_writes_with_a_foreign_schema() -> None:
    client = MemorySchemaRegistryClient()
    avro = {
        "type": "record",
        "name": "Foreign",
        "fields": [
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "color", "type": {"type": "enum", "name": "C", "symbols": ["R", "G"]}},
            {"name": "either", "type": ["int", "string"]},
        ],
    }
    schema_id = client.register("t-value", __import__("json").dumps(avro))
    buf = BytesIO()
    buf.write(b"\x00" + struct.pack(">I", schema_id))
    schemaless_writer(buf, parse_schema(avro), {"when": 5, "color": "G", "either": "s"})
    _, value = converter(client).to_connect_data("t", buf.getvalue())
    assert value.get("when") == 5  # timestamp-micros reads as its long
    assert value.get("color") == "G"
    either = value.get("either")
    assert either.schema.name == "io.confluent.connect.avro.Union"
    assert (either.get("int"), either.get("string")) == (None, "s")


@pytest.mark.parametrize("name", ["AvroConverter", "io.confluent.connect.avro.AvroConverter"])
def test_resolves_by_short_and_confluent_class_name(name: str) -> None:
    from connect.plugins import Plugins

    assert Plugins().resolve("converter", name) is AvroConverter


def test_strict_latest_refuses_a_latest_schema_that_cannot_read_the_record() -> None:
    client = MemorySchemaRegistryClient()
    v1 = Schema.struct([("a", INT32_SCHEMA)], name="x.R")
    v2 = Schema.struct([("a", INT32_SCHEMA), ("b", STRING_SCHEMA)], name="x.R")  # no default
    converter(client).from_connect_data("t", v2, Struct(v2, {"a": 1, "b": "z"}))
    c = converter(client, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    with pytest.raises(ConversionError, match="cannot read"):
        c.from_connect_data("t", v1, Struct(v1, {"a": 5}))
