"""The number and boolean converters, in Kafka's serializer formats.

| converter          | Kafka class (org.apache.kafka.connect.converters.) | bytes          |
| ShortConverter     | ShortConverter                                     | int16 BE (2)   |
| IntegerConverter   | IntegerConverter                                   | int32 BE (4)   |
| LongConverter      | LongConverter                                      | int64 BE (8)   |
| FloatConverter     | FloatConverter                                     | IEEE 754 BE (4)|
| DoubleConverter    | DoubleConverter                                    | IEEE 754 BE (8)|
| BooleanConverter   | BooleanConverter                                   | 0x00 / 0x01    |

Reading gives the optional schema of the type (`OPTIONAL_INT32_SCHEMA`, …) and a null
for no bytes, as Kafka's do; a byte string of the wrong size, a value of the wrong
type or out of range is a ConversionError naming the topic. Like Kafka's, these
converters ignore the schema they are handed and look at the value.

Batch paths pack and unpack with one `struct` call per batch (`iter_unpack` over the
joined bytes), which is what makes a keyed-by-integer pipeline cheap.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, ClassVar

from connect.api.data import (
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    Schema,
)
from connect.api.headers import Headers
from connect.api.plugins import SchemaAndValue
from connect.converters._base import DataHeaderConverter
from connect.converters._batch import pairs
from connect.converters.errors import FROM_BYTES, TO_BYTES, ConversionError

__all__ = [
    "BooleanConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "LongConverter",
    "ShortConverter",
]

_NONE = type(None)


def _wrong_type(topic: str, type_name: str, value: Any) -> ConversionError:
    return ConversionError(
        topic,
        f"failed to serialize to {type_name} (was {type(value).__name__})",
        direction=TO_BYTES,
    )


def _check_size(topic: str, type_name: str, size: int, data: bytes) -> None:
    if len(data) != size:
        raise ConversionError(
            topic,
            f"size of data received by the {type_name} deserializer is not {size} "
            f"(got {len(data)} bytes)",
            direction=FROM_BYTES,
        )


class _NumberConverter(DataHeaderConverter):
    """One fixed-size big-endian format; subclasses name it."""

    FORMAT: ClassVar[str]
    SCHEMA: ClassVar[Schema]
    TYPE_NAME: ClassVar[str]
    ACCEPTS: ClassVar[tuple[type, ...]] = (int,)
    RANGE: ClassVar[tuple[int, int] | None] = None

    def __init__(self) -> None:
        self._struct = struct.Struct(self.FORMAT)
        self._null = SchemaAndValue(self.SCHEMA, None)

    def _check(self, topic: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, self.ACCEPTS):
            raise _wrong_type(topic, self.TYPE_NAME, value)
        if self.RANGE is not None and not self.RANGE[0] <= value <= self.RANGE[1]:
            raise ConversionError(
                topic, f"{value} is out of range for {self.TYPE_NAME}", direction=TO_BYTES
            )
        return value

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None:
        if value is None:
            return None
        return self._struct.pack(self._check(topic, value))

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        kinds = set(map(type, values))
        if kinds and kinds <= set(self.ACCEPTS) and bool not in kinds:
            try:
                return list(map(self._struct.pack, values))
            except (struct.error, OverflowError):
                pass
        return [self.from_connect_data(topic, None, v) for v in values]

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return self._null
        _check_size(topic, self.TYPE_NAME, self._struct.size, data)
        return SchemaAndValue(self.SCHEMA, self._struct.unpack(data)[0])

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        try:
            if set(map(len, data)) == {self._struct.size}:
                values = [t[0] for t in self._struct.iter_unpack(b"".join(data))]
                return pairs(self.SCHEMA, values)
        except TypeError:  # a None among them
            pass
        return [self.to_connect_data(topic, d) for d in data]


class ShortConverter(_NumberConverter):
    """int16, 2 bytes big-endian (Kafka's ShortSerializer)."""

    FORMAT = ">h"
    SCHEMA = OPTIONAL_INT16_SCHEMA
    TYPE_NAME = "short"
    RANGE = (-(2**15), 2**15 - 1)


class IntegerConverter(_NumberConverter):
    """int32, 4 bytes big-endian (Kafka's IntegerSerializer)."""

    FORMAT = ">i"
    SCHEMA = OPTIONAL_INT32_SCHEMA
    TYPE_NAME = "integer"
    RANGE = (-(2**31), 2**31 - 1)


class LongConverter(_NumberConverter):
    """int64, 8 bytes big-endian (Kafka's LongSerializer)."""

    FORMAT = ">q"
    SCHEMA = OPTIONAL_INT64_SCHEMA
    TYPE_NAME = "long"
    RANGE = (-(2**63), 2**63 - 1)


class FloatConverter(_NumberConverter):
    """float32, 4 bytes IEEE 754 big-endian (Kafka's FloatSerializer). A Python float
    is rounded to the nearest float32, as a Java cast would."""

    FORMAT = ">f"
    SCHEMA = OPTIONAL_FLOAT32_SCHEMA
    TYPE_NAME = "float"
    ACCEPTS = (float, int)

    def _check(self, topic: str, value: Any) -> Any:
        value = super()._check(topic, value)
        try:
            self._struct.pack(value)
        except (OverflowError, struct.error):
            raise ConversionError(
                topic, f"{value} is out of range for float", direction=TO_BYTES
            ) from None
        return value


class DoubleConverter(_NumberConverter):
    """float64, 8 bytes IEEE 754 big-endian (Kafka's DoubleSerializer)."""

    FORMAT = ">d"
    SCHEMA = OPTIONAL_FLOAT64_SCHEMA
    TYPE_NAME = "double"
    ACCEPTS = (float, int)


class BooleanConverter(DataHeaderConverter):
    """One byte, 0x01 for true and 0x00 for false (Kafka's BooleanSerializer); reading
    any other byte, or more than one, is an error."""

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None:
        if value is None:
            return None
        if value is True:
            return b"\x01"
        if value is False:
            return b"\x00"
        raise _wrong_type(topic, "boolean", value)

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        if set(map(type, values)) == {bool}:
            return [b"\x01" if v else b"\x00" for v in values]
        return [self.from_connect_data(topic, None, v) for v in values]

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, None)
        _check_size(topic, "boolean", 1, data)
        byte = data[0]
        if byte > 1:
            raise ConversionError(
                topic,
                f"unexpected byte received by the boolean deserializer: {byte}",
                direction=FROM_BYTES,
            )
        return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, byte == 1)

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        table = {b"\x00": False, b"\x01": True}
        try:
            values = list(map(table.__getitem__, data))
        except (KeyError, TypeError):
            return [self.to_connect_data(topic, d) for d in data]
        return pairs(OPTIONAL_BOOLEAN_SCHEMA, values)
