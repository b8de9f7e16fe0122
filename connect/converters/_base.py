"""What the converters here share: the `converter.type` key, and the frame of a
converter that is also a header converter.

Every converter in this package accepts Kafka's `converter.type` (key, value or
header), which the worker sets; a converter that needs no other key declares only
that. A Converter that is also a HeaderConverter (all but SimpleHeaderConverter)
converts a header value exactly as it converts a record's key or value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, one_of
from connect.api.data import Schema
from connect.api.plugins import Converter, HeaderConverter, SchemaAndValue

__all__ = ["CONVERTER_TYPE_CONFIG", "DataHeaderConverter", "converter_type", "define_type"]

CONVERTER_TYPE_CONFIG = "converter.type"
CONVERTER_TYPE_DOC = "How this converter will be used: key, value or header."


def define_type(config: ConfigDef, doc: str = CONVERTER_TYPE_DOC) -> ConfigDef:
    """`config` with the `converter.type` key added (optional, no default)."""
    return config.define(
        CONVERTER_TYPE_CONFIG,
        ConfigType.STRING,
        None,
        one_of("key", "value", "header"),
        Importance.LOW,
        doc,
    )


def converter_type(parsed: Mapping[str, Any], is_key: bool | None) -> str:
    """What a converter is configured as: the worker passes `is_key` for a key or value
    converter; a header converter gets none, and `converter.type` (default `header`)
    says which it is."""
    if is_key is not None:
        return "key" if is_key else "value"
    return (parsed[CONVERTER_TYPE_CONFIG] or "header").lower()


class DataHeaderConverter(Converter, HeaderConverter):
    """A Converter that converts header values as data. Its keys are `converter.type`
    alone unless a subclass overrides `config()` (and `configure()` to use them)."""

    def config(self) -> ConfigDef:
        return define_type(ConfigDef())

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        self.config().parse(configs)

    def from_connect_header(
        self, topic: str, key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, key: str, data: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, data)
