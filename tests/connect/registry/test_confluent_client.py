"""Interoperability: confluent-kafka's own SchemaRegistryClient, AvroSerializer and
AvroDeserializer against our registry over HTTP (no Kafka broker needed)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "acme",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
    }
)
USER_V2 = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "acme",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
)
USER_BAD = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "acme",
        "fields": [{"name": "name", "type": "string"}, {"name": "zip", "type": "int"}],
    }
)


@pytest.fixture
def make_client(live) -> Iterator[Callable[[], SchemaRegistryClient]]:
    """Confluent clients for the live registry (closed at teardown: they keep sockets)."""
    clients: list[SchemaRegistryClient] = []

    def factory() -> SchemaRegistryClient:
        client = SchemaRegistryClient({"url": live.url, "max.retries": 0})
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def sr(make_client) -> SchemaRegistryClient:
    return make_client()


def test_register_get_lookup_versions(sr):
    schema_id = sr.register_schema("users-value", Schema(USER, "AVRO"))
    assert schema_id == 1
    assert sr.register_schema("other-value", Schema(USER, "AVRO")) == 1
    got = sr.get_schema(schema_id)
    assert json.loads(got.schema_str) == json.loads(USER)
    assert got.schema_type == "AVRO"
    looked = sr.lookup_schema("users-value", Schema(USER, "AVRO"))
    assert looked.schema_id == 1 and looked.version == 1
    assert sr.register_schema("users-value", Schema(USER_V2, "AVRO")) == 2
    latest = sr.get_latest_version("users-value")
    assert latest.version == 2 and latest.schema_id == 2
    assert sr.get_versions("users-value") == [1, 2]
    assert sr.get_version("users-value", 1).schema_id == 1
    assert sorted(sr.get_subjects()) == ["other-value", "users-value"]
    assert sr.get_subjects_by_schema_id(1) == ["other-value", "users-value"]
    assert sr.get_schema_types() == ["AVRO"]


def test_compatibility_and_config(sr):
    sr.register_schema("users-value", Schema(USER, "AVRO"))
    assert sr.test_compatibility("users-value", Schema(USER_V2, "AVRO")) is True
    assert sr.test_compatibility("users-value", Schema(USER_BAD, "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as failed:
        sr.register_schema("users-value", Schema(USER_BAD, "AVRO"))
    assert failed.value.http_status_code == 409
    assert failed.value.error_code in (409, 40901)
    assert sr.get_compatibility() == "BACKWARD"
    with pytest.raises(SchemaRegistryError) as missing:
        sr.get_compatibility("users-value")
    assert missing.value.error_code == 40408
    sr.set_compatibility("users-value", "NONE")
    assert sr.get_compatibility("users-value") == "NONE"
    assert sr.register_schema("users-value", Schema(USER_BAD, "AVRO")) == 2
    sr.set_compatibility(level="FULL")
    assert sr.get_compatibility() == "FULL"


def test_delete_subject_and_errors(sr):
    sr.register_schema("users-value", Schema(USER, "AVRO"))
    sr.register_schema("users-value", Schema(USER_V2, "AVRO"))
    assert sr.delete_version("users-value", 2) == 2
    assert sr.delete_subject("users-value") == [1]
    assert sr.get_subjects() == []
    assert sr.delete_subject("users-value", permanent=True) == [1, 2]
    with pytest.raises(SchemaRegistryError) as gone:
        sr.get_latest_version("users-value")
    assert gone.value.http_status_code == 404 and gone.value.error_code == 40401
    with pytest.raises(SchemaRegistryError) as invalid:
        sr.register_schema("x-value", Schema('{"type": "nope"}', "AVRO"))
    assert invalid.value.error_code == 42201
    with pytest.raises(SchemaRegistryError) as no_id:
        sr.get_schema(12345)
    assert no_id.value.error_code == 40403


def test_mode(sr):
    sr.update_mode("users-value", "READWRITE")
    assert sr.get_mode("users-value") == "READWRITE"
    sr.update_global_mode("READONLY")
    assert sr.get_global_mode() == "READONLY"
    with pytest.raises(SchemaRegistryError) as ro:
        sr.register_schema("orders-value", Schema(USER, "AVRO"))
    assert ro.value.error_code == 42205
    # the subject's own mode overrides the global one
    assert sr.register_schema("users-value", Schema(USER, "AVRO")) == 1
    sr.update_global_mode("READWRITE")
    assert sr.register_schema("orders-value", Schema(USER, "AVRO")) == 1


@pytest.mark.parametrize("auto_register", [True, False])
def test_avro_serializer_round_trip(live, make_client, auto_register):
    sr = make_client()
    if not auto_register:
        sr.register_schema("orders-value", Schema(USER, "AVRO"))
    serializer = AvroSerializer(sr, USER, conf={"auto.register.schemas": auto_register})
    ctx = SerializationContext("orders", MessageField.VALUE)
    value = {"name": "Ada", "age": 36}
    data = serializer(value, ctx)
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == 1
    # a fresh client, so the deserializer really fetches the schema by id
    reader = make_client()
    assert AvroDeserializer(reader)(data, ctx) == value
    assert live.registry.versions("orders-value") == [1]
