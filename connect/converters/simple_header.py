"""SimpleHeaderConverter: Kafka's default header converter
(`org.apache.kafka.connect.storage.SimpleHeaderConverter`).

Header values are written as UTF-8 text in Kafka's `Values` conventions (a string as
itself, other values as readable text, see `connect.converters.values`) and read back
by parsing that text, inferring the schema: `true` is a boolean, `42` an int8, `[1,2]`
an array, `2024-01-31` a Date, anything else a string. A header written by a Java
worker therefore reads the same here, and the other way round.

Reading never fails on content (unparseable text is a string, invalid UTF-8 is
replaced as Java's decoder does), because one odd header should not send a whole
record to the dead-letter queue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef
from connect.api.data import Schema
from connect.api.plugins import HeaderConverter, SchemaAndValue
from connect.converters.errors import TO_BYTES, ConversionError
from connect.converters.values import format_value, parse_value

__all__ = ["SimpleHeaderConverter"]

_NULL = SchemaAndValue(None, None)


class SimpleHeaderConverter(HeaderConverter):
    """Header values ⇄ UTF-8 text with inferred types (see the module docstring)."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Nothing to configure (Kafka's takes no settings either)."""

    def from_connect_header(
        self, topic: str, key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        if type(value) is str:
            text = value
        else:
            text = format_value(schema, value)
            if text is None:
                return None
        try:
            return text.encode("utf-8")
        except UnicodeError as exc:
            raise ConversionError(
                topic, f"header {key!r} is not encodable as UTF-8: {exc}", direction=TO_BYTES
            ) from exc

    def to_connect_header(self, topic: str, key: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return _NULL
        return parse_value(bytes(data).decode("utf-8", errors="replace"))
