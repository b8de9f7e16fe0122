"""Every converter resolves by short name and by Kafka class name, as the worker's
defaults and users' Kafka configs name them."""

from __future__ import annotations

import pytest

from connect.api import Converter, HeaderConverter
from connect.converters import ALIASES
from connect.plugins import Plugins

KAFKA_NAMES = {
    "io.confluent.connect.avro.AvroConverter": "AvroConverter",
    "org.apache.kafka.connect.json.JsonConverter": "JsonConverter",
    "org.apache.kafka.connect.storage.StringConverter": "StringConverter",
    "org.apache.kafka.connect.converters.ByteArrayConverter": "ByteArrayConverter",
    "org.apache.kafka.connect.converters.ShortConverter": "ShortConverter",
    "org.apache.kafka.connect.converters.IntegerConverter": "IntegerConverter",
    "org.apache.kafka.connect.converters.LongConverter": "LongConverter",
    "org.apache.kafka.connect.converters.FloatConverter": "FloatConverter",
    "org.apache.kafka.connect.converters.DoubleConverter": "DoubleConverter",
    "org.apache.kafka.connect.converters.BooleanConverter": "BooleanConverter",
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": "SimpleHeaderConverter",
}


@pytest.mark.parametrize(("kafka_name", "short"), sorted(KAFKA_NAMES.items()))
def test_kafka_and_short_names_resolve(kafka_name: str, short: str) -> None:
    plugins = Plugins()
    kind = "header_converter" if short == "SimpleHeaderConverter" else "converter"
    cls = plugins.resolve(kind, kafka_name)
    assert cls.__name__ == short
    assert plugins.resolve(kind, short) is cls
    instance = cls()
    assert instance.config() is not None
    settings = {"schema.registry.url": "mock://aliases"} if short == "AvroConverter" else {}
    if isinstance(instance, Converter):
        instance.configure(settings, False)
    else:
        instance.configure({})


def test_every_alias_is_listed() -> None:
    assert set(ALIASES) == set(KAFKA_NAMES) | set(KAFKA_NAMES.values())


@pytest.mark.parametrize(
    "name",
    [
        "org.apache.kafka.connect.json.JsonConverter",
        "org.apache.kafka.connect.storage.StringConverter",
        "org.apache.kafka.connect.converters.IntegerConverter",
    ],
)
def test_value_converters_also_serve_as_header_converters(name: str) -> None:
    cls = Plugins().resolve("header_converter", name)
    instance = cls()
    assert isinstance(instance, HeaderConverter)
    instance.configure({})
    if not name.endswith("IntegerConverter"):
        assert instance.converter_type == "header"
