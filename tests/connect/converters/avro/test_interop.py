"""Interoperability with Confluent's own Python client, through our registry server.

Records written by our AvroConverter are read by confluent-kafka's AvroDeserializer, and
records written by its AvroSerializer are read by our converter, both against the
registry of `connect.registry` served over HTTP on port 0 (no stub). confluent-kafka
comes with the test extra; without it this module fails, it is never skipped."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka.schema_registry as schema_registry
import confluent_kafka.schema_registry.avro as avro_serde
import confluent_kafka.serialization as serialization
import pytest

from connect.api.data import (
    BYTES_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Struct,
)
from connect.api.logical import Date, Decimal, Timestamp
from connect.converters.avro import AvroConverter

pytestmark = pytest.mark.integration

INNER = Schema.struct([("code", STRING_SCHEMA)], name="com.acme.Inner")
ORDER = Schema.struct(
    [
        ("id", INT64_SCHEMA),
        ("tiny", INT8_SCHEMA),
        ("name", STRING_SCHEMA),
        ("price", FLOAT64_SCHEMA),
        ("blob", BYTES_SCHEMA),
        ("note", OPTIONAL_STRING_SCHEMA),
        ("day", Date.schema()),
        ("ts", Timestamp.schema()),
        ("amount", Decimal.schema(2)),
        ("inner", INNER),
        ("tags", Schema.array(STRING_SCHEMA)),
        ("attrs", Schema.map(STRING_SCHEMA, INT64_SCHEMA)),
    ],
    name="com.acme.Order",
)
WHEN = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)


def order(i: int) -> Struct:
    return Struct(
        ORDER,
        {
            "id": i,
            "tiny": -1,
            "name": f"order-{i}",
            "price": i * 1.5,
            "blob": bytes([i % 256]),
            "note": None if i % 2 else "even",
            "day": dt.date(2024, 5, 6),
            "ts": WHEN,
            "amount": decimal.Decimal("12.34"),
            "inner": Struct(INNER, {"code": "x"}),
            "tags": ["a"],
            "attrs": {"k": i},
        },
    )


@pytest.fixture
def confluent_client(registry_url: str) -> Iterator[object]:
    """Confluent's SchemaRegistryClient pointed at our registry (closed afterwards)."""
    client = schema_registry.SchemaRegistryClient({"url": registry_url})
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def registry_url(tmp_path: Path) -> Iterator[str]:
    """Our registry, over a FileLog in tmp_path, served on port 0."""
    from connect.registry import core, rest
    from log import FileLog

    log = FileLog(tmp_path / "log", background=False)
    registry = core.SchemaRegistry(log)
    registry.start()
    server = rest.RegistryServer(registry, port=0)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()
        registry.close()
        log.close()


def context(topic: str) -> object:
    return serialization.SerializationContext(topic, serialization.MessageField.VALUE)


def test_confluent_deserializer_reads_what_our_converter_writes(
    registry_url: str, confluent_client: object
) -> None:
    ours = AvroConverter()
    ours.configure({"schema.registry.url": registry_url}, False)
    records = [order(i) for i in range(20)]
    messages = ours.from_connect_batch("orders", [ORDER] * 20, records)
    ours.close()

    client = confluent_client
    deserializer = avro_serde.AvroDeserializer(client)
    for record, message in zip(records, messages, strict=True):
        got = deserializer(message, context("orders"))
        want = record.to_dict()
        assert got == want
    assert client.get_latest_version("orders-value").schema_id == int.from_bytes(
        messages[0][1:5], "big"
    )


CONFLUENT_SCHEMA = {
    "type": "record",
    "name": "Payment",
    "namespace": "com.acme",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "who", "type": "string"},
        {"name": "memo", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CARD", "CASH"]}},
    ],
}


def test_our_converter_reads_what_the_confluent_serializer_writes(
    registry_url: str, confluent_client: object
) -> None:
    client = confluent_client
    serializer = avro_serde.AvroSerializer(
        client,
        json.dumps(CONFLUENT_SCHEMA),
        conf={"subject.name.strategy": schema_registry.topic_subject_name_strategy},
    )
    payments = [
        {
            "id": i,
            "who": f"p{i}",
            "memo": None if i % 2 else "m",
            "at": WHEN,
            "amount": decimal.Decimal("9.99"),
            "kind": "CASH",
        }
        for i in range(10)
    ]
    messages = [serializer(p, context("payments")) for p in payments]

    ours = AvroConverter()
    ours.configure({"schema.registry.url": registry_url}, False)
    decoded = ours.to_connect_batch("payments", messages)
    assert [ours.to_connect_data("payments", m) for m in messages] == decoded
    ours.close()
    schema = decoded[0].schema
    assert schema.name == "com.acme.Payment"
    assert schema.field("amount").schema.name == Decimal.LOGICAL_NAME
    assert schema.field("at").schema.name == Timestamp.LOGICAL_NAME
    for payment, (_, value) in zip(payments, decoded, strict=True):
        assert value.to_dict() == payment


def test_a_round_trip_through_both_keeps_the_schema_id(
    registry_url: str, confluent_client: object
) -> None:
    ours = AvroConverter()
    ours.configure({"schema.registry.url": registry_url}, False)
    message = ours.from_connect_data("orders", ORDER, order(1))
    client = confluent_client
    datum = avro_serde.AvroDeserializer(client)(message, context("orders"))
    schema_text = client.get_schema(int.from_bytes(message[1:5], "big")).schema_str
    again = avro_serde.AvroSerializer(
        client,
        schema_text,
        conf={"subject.name.strategy": schema_registry.topic_subject_name_strategy},
    )(datum, context("orders"))
    assert again == message
    assert ours.to_connect_data("orders", again).value == order(1)
    ours.close()
