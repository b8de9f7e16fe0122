"""StringConverter and ByteArrayConverter: the two converters that add no format.

StringConverter (Kafka's `org.apache.kafka.connect.storage.StringConverter`) writes a
string in `converter.encoding` (UTF-8 by default) and any other value as its string
form (Java's `toString` conventions: `true`, `1.0E10`, `[1, 2]`, `{a=1}`,
`Struct{a=1}`), and reads bytes back as an optional string. It is also a header
converter. Kafka's `serializer.encoding` / `deserializer.encoding` are honoured
when `converter.encoding` is not given.

ByteArrayConverter (`org.apache.kafka.connect.converters.ByteArrayConverter`) passes
bytes through untouched and refuses anything else: it is what a pipeline uses to copy
data it does not need to understand.

Both are the converters with the least work per record, so their batch paths are
single C-level passes (`map(str.encode, …)`, list copies).
"""

from __future__ import annotations

import codecs
import datetime as _dt
import decimal as _decimal
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import OPTIONAL_BYTES_SCHEMA, OPTIONAL_STRING_SCHEMA, Schema, Struct, Type
from connect.api.errors import ConfigError
from connect.api.headers import Headers
from connect.api.json_values import java_double
from connect.api.plugins import SchemaAndValue
from connect.converters._base import CONVERTER_TYPE_CONFIG as CONVERTER_TYPE_CONFIG
from connect.converters._base import (
    DataHeaderConverter,
    converter_type,
    define_type,
)
from connect.converters._batch import pairs
from connect.converters.errors import FROM_BYTES, TO_BYTES, ConversionError

__all__ = ["ByteArrayConverter", "StringConverter", "java_string"]

ENCODING_CONFIG = "converter.encoding"
ENCODING_DEFAULT = "UTF-8"
ENCODING_DOC = "The name of the Java character set to use for encoding strings as byte arrays."

_NULL_BYTES = SchemaAndValue(OPTIONAL_BYTES_SCHEMA, None)
_NULL_STRING = SchemaAndValue(OPTIONAL_STRING_SCHEMA, None)


def java_string(value: Any) -> str:
    """A value's string form as Java's `toString` writes it (what Kafka's
    StringConverter writes for a value that is not a string)."""
    if isinstance(value, str):
        return value
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Struct):
        inner = ",".join(
            f"{f.name}={java_string(value.get_without_default(f.name))}"
            for f in value.schema.fields
            if value.get_without_default(f.name) is not None
        )
        return f"Struct{{{inner}}}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{java_string(k)}={java_string(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _decimal.Decimal):
        return str(value)
    return str(value)


def _check_encoding(name: str, value: Any) -> None:
    try:
        codecs.lookup(str(value))
    except LookupError:
        raise ConfigError(name, value, "unknown character encoding") from None


def _string_config() -> ConfigDef:
    return define_type(
        ConfigDef().define(
            ENCODING_CONFIG,
            ConfigType.STRING,
            ENCODING_DEFAULT,
            _check_encoding,
            Importance.HIGH,
            ENCODING_DOC,
            group="Converter",
            order_in_group=1,
            display_name="Character encoding",
        )
    )


class StringConverter(DataHeaderConverter):
    """Strings in a character encoding (see the module docstring)."""

    def __init__(self) -> None:
        self.encoding = "utf-8"
        self._utf8 = True
        self.converter_type = "value"

    def config(self) -> ConfigDef:
        return _string_config()

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        props = dict(configs)
        if ENCODING_CONFIG not in props:
            # Kafka's StringSerializer/Deserializer settings, when only those are given.
            legacy = props.get("serializer.encoding") or props.get("deserializer.encoding")
            if legacy:
                props[ENCODING_CONFIG] = legacy
        parsed = _string_config().parse(props)
        self.encoding = codecs.lookup(parsed[ENCODING_CONFIG]).name
        self._utf8 = self.encoding == "utf-8"
        self.converter_type = converter_type(parsed, is_key)

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None:
        if value is None:
            return None
        text = value if type(value) is str else java_string(value)
        try:
            return text.encode(self.encoding)
        except UnicodeError as exc:
            raise ConversionError(
                topic, f"cannot encode the string in {self.encoding}: {exc}", direction=TO_BYTES
            ) from exc

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        if self._utf8:
            try:
                return list(map(str.encode, values))
            except (TypeError, UnicodeError):
                pass
        return [self.from_connect_data(topic, None, v) for v in values]

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return _NULL_STRING
        try:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, bytes(data).decode(self.encoding))
        except UnicodeError as exc:
            raise ConversionError(
                topic, f"the data is not valid {self.encoding}: {exc}", direction=FROM_BYTES
            ) from exc

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        if self._utf8:
            try:
                texts = list(map(bytes.decode, data))
            except (TypeError, UnicodeError):
                return [self.to_connect_data(topic, d) for d in data]
            return pairs(OPTIONAL_STRING_SCHEMA, texts)
        return [self.to_connect_data(topic, d) for d in data]


class ByteArrayConverter(DataHeaderConverter):
    """Raw bytes, untouched (see the module docstring)."""

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise ConversionError(
                topic,
                f"invalid schema type for ByteArrayConverter: {schema.type}",
                direction=TO_BYTES,
            )
        if value is None or type(value) is bytes:
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise ConversionError(
            topic,
            f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}",
            direction=TO_BYTES,
        )

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        kinds = set(map(type, values))
        if kinds <= {bytes, type(None)} and _all_bytes_schemas(schemas):
            return list(values)
        return [self.from_connect_data(topic, s, v) for s, v in zip(schemas, values, strict=True)]

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return _NULL_BYTES
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, data)

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        return pairs(OPTIONAL_BYTES_SCHEMA, data)


def _all_bytes_schemas(schemas: Sequence[Schema | None]) -> bool:
    """Whether every schema is None or BYTES (checked once per distinct object)."""
    seen: set[int] = set()
    for schema in schemas:
        if schema is None or id(schema) in seen:
            continue
        if schema.type is not Type.BYTES:
            return False
        seen.add(id(schema))
    return True
