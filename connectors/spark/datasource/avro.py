"""`value.format=avro`: Confluent wire-format Avro values (magic byte 0, a 4-byte
schema id, Avro binary) decoded into columns.

Schemas come from a schema registry by id: `schema.registry.url=embedded` (the
default) reads the log's own `_schemas` topic — where the embedded registry of a
worker on this log keeps them, in Confluent's record format — and an http(s) URL asks
any Confluent-compatible registry (`GET /schemas/ids/<id>`). The Arrow (and so Spark)
type of each column follows the Avro schema:

| Avro                                   | Arrow / Spark                     |
| int, long, float, double, boolean      | int32, int64, float32, float64, bool |
| string, enum / bytes, fixed            | string / binary                   |
| bytes + decimal(p, s)                  | decimal128(p, s)                  |
| int + date                             | date32                            |
| long + timestamp-millis / -micros      | timestamp[UTC]                    |
| record / array / map                   | struct / list / map               |
| union with null                        | the other branch, nullable        |

The table's columns come from the newest record's schema; a record written with
another (older) schema is decoded with its own and projected onto them by name,
missing columns null. Decoding is fastavro's, a record at a time: fine for reading a
topic into Spark, where partitions decode in parallel.
"""

from __future__ import annotations

import io
import json
import struct
import urllib.request
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

__all__ = ["AvroDecoder", "arrow_schema_of"]

_MAGIC = 0
_TIMESTAMP = {"timestamp-millis": "ms", "timestamp-micros": "us"}


def _arrow_type(node: Any) -> tuple[pa.DataType, bool]:
    """(type, nullable) of an Avro schema node."""
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        if len(branches) != 1:
            raise ValueError(f"value.format=avro: unions other than [null, X]: {node}")
        return _arrow_type(branches[0])[0], True
    if isinstance(node, str):
        node = {"type": node}
    t, logical = node.get("type"), node.get("logicalType")
    if isinstance(t, (dict, list)):
        return _arrow_type(t)
    if logical == "decimal" and t in ("bytes", "fixed"):
        return pa.decimal128(
            min(int(node.get("precision", 38)), 38), int(node.get("scale", 0))
        ), False
    if logical == "date" and t == "int":
        return pa.date32(), False
    if logical in _TIMESTAMP and t == "long":
        return pa.timestamp(_TIMESTAMP[logical], tz="UTC"), False
    simple = {
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "string": pa.string(),
        "enum": pa.string(),
        "bytes": pa.binary(),
        "fixed": pa.binary(),
        "null": pa.null(),
    }
    if t in simple:
        return simple[t], False
    if t == "array":
        return pa.list_(_arrow_type(node["items"])[0]), False
    if t == "map":
        return pa.map_(pa.string(), _arrow_type(node["values"])[0]), False
    if t == "record":
        return pa.struct([_field(f) for f in node["fields"]]), False
    raise ValueError(f"value.format=avro: no column type for {node!r}")


def _field(node: dict[str, Any]) -> pa.Field:
    # Every column is nullable, as Spark reads Parquet and data source columns anyway.
    return pa.field(node["name"], _arrow_type(node["type"])[0])


def arrow_schema_of(schema_json: str) -> pa.Schema:
    node = json.loads(schema_json)
    if not isinstance(node, dict) or node.get("type") != "record":
        return pa.schema([pa.field("value", _arrow_type(node)[0])])
    return pa.schema([_field(f) for f in node["fields"]])


class _Registry:
    """Schema texts by id, from the log's `_schemas` topic or a registry's REST API."""

    def __init__(self, url: str, log: Any) -> None:
        self._url = url.rstrip("/")
        self._log = log
        self._known: dict[int, str] = {}

    def schema(self, schema_id: int) -> str:
        text = self._known.get(schema_id)
        if text is None:
            if self._url == "embedded":
                self._replay()
            else:
                with urllib.request.urlopen(
                    f"{self._url}/schemas/ids/{schema_id}", timeout=30
                ) as r:
                    self._known[schema_id] = json.loads(r.read())["schema"]
            text = self._known.get(schema_id)
            if text is None:
                raise ValueError(f"value.format=avro: no schema with id {schema_id}")
        return text

    def _replay(self) -> None:
        if "_schemas" not in self._log.list_topics(include_internal=True):
            return
        offset = self._log.earliest_offset("_schemas", 0)
        end = self._log.latest_offset("_schemas", 0)
        while offset < end:
            records = self._log.read("_schemas", 0, offset)
            if not records:
                break
            for record in records:
                if record.value and b'"SCHEMA"' in (record.key or b""):
                    value = json.loads(record.value)
                    if "id" in value and "schema" in value:
                        self._known[int(value["id"])] = value["schema"]
            offset = records[-1].offset + 1


class AvroDecoder:
    """Confluent wire-format values → Arrow record batches of one target schema."""

    def __init__(self, url: str, log: Any) -> None:
        self._registry = _Registry(url, log)
        self._parsed: dict[int, Any] = {}

    def writer_schema(self, data: bytes) -> str:
        return self._registry.schema(self._id(data))

    @staticmethod
    def _id(data: bytes) -> int:
        if len(data) < 5 or data[0] != _MAGIC:
            raise ValueError("value.format=avro: not Confluent's wire format (magic byte 0)")
        return int(struct.unpack_from(">I", data, 1)[0])

    def _reader(self, schema_id: int) -> Any:
        parsed = self._parsed.get(schema_id)
        if parsed is None:
            from fastavro import parse_schema

            parsed = self._parsed[schema_id] = parse_schema(
                json.loads(self._registry.schema(schema_id))
            )
        return parsed

    def decode(self, values: Sequence[bytes], target: pa.Schema) -> pa.RecordBatch:
        from fastavro import schemaless_reader

        rows = []
        for data in values:
            parsed = self._reader(self._id(data))
            row = schemaless_reader(io.BytesIO(memoryview(data)[5:]), parsed, None)
            rows.append(row if isinstance(row, dict) else {"value": row})
        return pa.RecordBatch.from_pylist(rows, schema=target)
