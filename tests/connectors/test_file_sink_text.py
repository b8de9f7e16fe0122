"""FileStreamSink writes a structured value as Kafka's does, byte for byte.

Kafka's FileStreamSinkTask writes `outputStream.println(record.value())` (Apache Kafka,
connect/file/src/main/java/org/apache/kafka/connect/file/FileStreamSinkTask.java):
the Java object's `toString`. JsonConverter turns a JSON object without a schema into
a `java.util.HashMap`, an integral number into a Long and any other number into a
Double (connect/json/src/main/java/org/apache/kafka/connect/json/JsonConverter.java,
`convertToConnect`); a struct prints as Struct.java's `toString` (connect/api/src/main/
java/org/apache/kafka/connect/data/Struct.java: set fields only, joined by `,`); Decimal
and Timestamp values are a BigDecimal and a java.util.Date. The expected lines below
are those Java forms (the JDK's own output for the same values is checked in
tests/connect/test_java_text.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from connect.herder.standalone import StandaloneHerder
from tests.waiting import wait_until

JSON = "org.apache.kafka.connect.json.JsonConverter"

ORDER_SCHEMA = {
    "type": "struct",
    "name": "shop.order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": True},
        {"field": "paid", "type": "boolean", "optional": False},
        {"field": "weight", "type": "double", "optional": False},
        {"field": "ratio", "type": "float", "optional": False},
        {
            "field": "price",
            "type": "bytes",
            "optional": False,
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2"},
        },
        {
            "field": "at",
            "type": "int64",
            "optional": False,
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
        },
        {"field": "tags", "type": "array", "items": {"type": "string"}, "optional": False},
        {
            "field": "attrs",
            "type": "map",
            "keys": {"type": "string"},
            "values": {"type": "int32"},
            "optional": False,
        },
    ],
}


def _order(id_: int, name: str | None, weight: float, price_b64: str) -> bytes:
    payload = {
        "id": id_,
        "name": name,
        "paid": id_ % 2 == 1,
        "weight": weight,
        "ratio": 0.1,
        "price": price_b64,
        "at": 1_700_000_000_123,
        "tags": ["a", "b"],
        "attrs": {"size": 3, "color": 1},
    }
    return json.dumps({"schema": ORDER_SCHEMA, "payload": payload}).encode()


#: (JSON message, the line Kafka's FileStreamSink writes for it)
SCHEMALESS = [
    (b'{"some_key":0}', "{some_key=0}"),
    (b'{"name":"pen","id":7,"price":1.5,"ok":true}', "{price=1.5, name=pen, id=7, ok=true}"),
    (b'{"b":[1,2.0,null],"a":{"x":false,"y":1e10}}', "{a={x=false, y=1.0E10}, b=[1, 2.0, null]}"),
    (b'"plain text"', "plain text"),
    (b"42", "42"),
    (b"1.5e-7", "1.5E-7"),
    (b"true", "true"),
    (b"null", "null"),
]
WITH_SCHEMA = [
    (
        _order(1, "pen", 1e10, "BOI="),  # 0x04E2 = 1250, scale 2
        "Struct{id=1,name=pen,paid=true,weight=1.0E10,ratio=0.1,price=12.50,"
        "at=Tue Nov 14 22:13:20 UTC 2023,tags=[a, b],attrs={size=3, color=1}}",
    ),
    (
        _order(2, None, 0.5, "AA=="),  # a null field is left out; 0 at scale 2
        "Struct{id=2,paid=false,weight=0.5,ratio=0.1,price=0.00,"
        "at=Tue Nov 14 22:13:20 UTC 2023,tags=[a, b],attrs={size=3, color=1}}",
    ),
]


@pytest.mark.parametrize(
    ("schemas", "cases"),
    [("false", SCHEMALESS), ("true", WITH_SCHEMA)],
    ids=["schemaless", "schema"],
)
def test_file_sink_writes_values_as_kafkas_file_sink_does(
    start_herder: Callable[..., StandaloneHerder],
    local_zone: Callable[[str], None],
    tmp_path: Path,
    schemas: str,
    cases: list[tuple[bytes, str]],
) -> None:
    local_zone("UTC")  # dates print in the worker's zone, as in a JVM
    herder = start_herder()
    herder.log.create_topic("in", 1)
    herder.log.append("in", 0, [message for message, _ in cases])
    out = tmp_path / "out.txt"
    herder.put_connector_config(
        "sink",
        {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "topics": "in",
            "file": str(out),
            "value.converter": JSON,
            "value.converter.schemas.enable": schemas,
        },
        allow_replace=False,
    )
    expected = "".join(line + "\n" for _, line in cases).encode()
    wait_until(
        lambda: out.exists() and len(out.read_bytes()) >= len(expected), 60, "the sink's lines"
    )
    assert out.read_bytes() == expected


def test_plain_strings_and_bytes_keep_their_fast_path(tmp_path: Path) -> None:
    """Strings are written as they are (an unpaired surrogate as `?`, as Java's
    PrintStream encodes it), bytes as they are (Java would print `[B@<hash>`)."""
    from connect.api import SinkRecord
    from connectors.file.sink import FileStreamSinkTask

    out = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    task.put([SinkRecord(topic="t", kafka_partition=0, value=v) for v in ["a", "b\ud800c"]])
    task.put([SinkRecord(topic="t", kafka_partition=0, value=v) for v in [b"\x00\xff", "d", None]])
    task.stop()
    assert out.read_bytes() == b"a\nb?c\n\x00\xff\nd\nnull\n"
