"""Converters: Connect data ⇄ the bytes in the log, in Kafka Connect's formats.

| class                    | module           | Kafka package (+ class name)        |
| JsonConverter            | json_converter   | org.apache.kafka.connect.json       |
| StringConverter          | string_converter | org.apache.kafka.connect.storage    |
| ByteArrayConverter       | string_converter | org.apache.kafka.connect.converters |
| Short/Integer/Long/Float/Double/BooleanConverter | primitives | …connect.converters |
| SimpleHeaderConverter    | simple_header    | org.apache.kafka.connect.storage    |
| (values: Kafka's `Values` text forms; the JSON format itself, schema JSON, values  |
| and JSON → Arrow, is the plugin API's: connect.api.json_*, which plugins read too) |

`ALIASES` maps the names users write in `key.converter`, `value.converter` and
`header.converter` — short names and Kafka's class names, so worker and connector
configs move over unchanged — to "module:Class" paths that `connect.plugins` imports
only when a config names them.
"""

from __future__ import annotations

from connect.converters.errors import ConversionError
from connect.converters.json_converter import JsonConverter
from connect.converters.primitives import (
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from connect.converters.simple_header import SimpleHeaderConverter
from connect.converters.string_converter import ByteArrayConverter, StringConverter

__all__ = [
    "ALIASES",
    "BooleanConverter",
    "ByteArrayConverter",
    "ConversionError",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "JsonConverter",
    "LongConverter",
    "ShortConverter",
    "SimpleHeaderConverter",
    "StringConverter",
]

# (short name, Kafka package of the class, "module:Class")
_PLUGINS: tuple[tuple[str, str, str], ...] = (
    ("JsonConverter", "org.apache.kafka.connect.json", "connect.converters.json_converter"),
    ("StringConverter", "org.apache.kafka.connect.storage", "connect.converters.string_converter"),
    (
        "ByteArrayConverter",
        "org.apache.kafka.connect.converters",
        "connect.converters.string_converter",
    ),
    ("ShortConverter", "org.apache.kafka.connect.converters", "connect.converters.primitives"),
    ("IntegerConverter", "org.apache.kafka.connect.converters", "connect.converters.primitives"),
    ("LongConverter", "org.apache.kafka.connect.converters", "connect.converters.primitives"),
    ("FloatConverter", "org.apache.kafka.connect.converters", "connect.converters.primitives"),
    ("DoubleConverter", "org.apache.kafka.connect.converters", "connect.converters.primitives"),
    ("BooleanConverter", "org.apache.kafka.connect.converters", "connect.converters.primitives"),
    (
        "SimpleHeaderConverter",
        "org.apache.kafka.connect.storage",
        "connect.converters.simple_header",
    ),
)

ALIASES: dict[str, str] = {}
for _short, _kafka_package, _module in _PLUGINS:
    ALIASES[_short] = f"{_module}:{_short}"
    ALIASES[f"{_kafka_package}.{_short}"] = f"{_module}:{_short}"
del _short, _kafka_package, _module
ALIASES["AvroConverter"] = "connect.converters.avro.converter:AvroConverter"
ALIASES["io.confluent.connect.avro.AvroConverter"] = ALIASES["AvroConverter"]
