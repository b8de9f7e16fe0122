"""Avro container files (`.avro`) through fastavro, one schema per object.

The Avro schema is derived from the records' Connect schema (optional → a union with
null, int8/int16 → int, Decimal/Date/Time/Timestamp → Avro's logical types, maps with
string keys → Avro maps), and the Connect schema itself is kept in the file's
metadata (`connect.schema`) so a restore returns the exact schema. The sync marker is
derived from the object key: random markers would make a replay's bytes differ.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from typing import Any

import fastavro
from fastavro.write import Writer

from connect.api import DataError, Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connectors.s3.formats.base import FileWriter, Format, Sink
from connectors.s3.formats.schemas import (
    METADATA_KEY,
    from_plain,
    needs_nesting,
    schema_from_json,
    schema_to_json,
    to_struct,
)

__all__ = ["AvroFormat", "to_avro_schema"]

_PRIMITIVE = {
    Type.INT8: "int",
    Type.INT16: "int",
    Type.INT32: "int",
    Type.INT64: "long",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
}


def to_avro_schema(schema: Schema) -> Any:
    names: set[str] = set()
    return _avro(schema, names)


def _avro(schema: Schema, names: set[str]) -> Any:
    out = _avro_required(schema, names)
    if schema.optional:
        return ["null", out]
    return out


def _avro_required(schema: Schema, names: set[str]) -> Any:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        params = schema.parameters
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": int(params.get("connect.decimal.precision", 38)),
            "scale": Decimal.scale(schema),
        }
    if name == Date.LOGICAL_NAME:
        return {"type": "int", "logicalType": "date"}
    if name == Time.LOGICAL_NAME:
        return {"type": "int", "logicalType": "time-millis"}
    if name == Timestamp.LOGICAL_NAME:
        return {"type": "long", "logicalType": "timestamp-millis"}
    t = schema.type
    if t in _PRIMITIVE:
        if t in (Type.INT8, Type.INT16):
            return {"type": "int", "connect.type": t.value}
        return _PRIMITIVE[t]
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return {"type": "array", "items": _avro(schema.value_schema, names)}
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if schema.key_schema.type is not Type.STRING:
            raise DataError("AvroFormat writes maps with string keys only")
        return {"type": "map", "values": _avro(schema.value_schema, names)}
    full = name or "io.confluent.connect.avro.ConnectDefault"
    base = full
    i = 1
    while full in names:
        i += 1
        full = f"{base}{i}"
    names.add(full)
    namespace, _, short = full.rpartition(".")
    record: dict[str, Any] = {"type": "record", "name": short, "fields": []}
    if namespace:
        record["namespace"] = namespace
    for f in schema.fields:
        field: dict[str, Any] = {"name": f.name, "type": _avro(f.schema, names)}
        if f.schema.optional:
            field["default"] = None
        record["fields"].append(field)
    return record


def _plain(value: Any) -> Any:
    """What fastavro writes for a Connect value (structs as dicts)."""
    if isinstance(value, Struct):
        return {f.name: _plain(v) for f, v in zip(value.schema.fields, value.values(), strict=True)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _SinkFile(io.RawIOBase):
    def __init__(self, sink: Sink) -> None:
        self._sink = sink

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sink.write(bytes(data))
        return len(data)


class _AvroWriter(FileWriter):
    def __init__(self, sink: Sink, schema: Schema, parsed: Any, codec: str) -> None:
        self._file = _SinkFile(sink)
        self._writer = Writer(
            self._file,
            parsed,
            codec=codec,
            metadata={METADATA_KEY: schema_to_json(schema).decode()},
            sync_marker=hashlib.md5(sink.key.encode()).digest(),
        )

    def write(self, values: Sequence[Any]) -> None:
        write = self._writer.write
        for v in values:
            write(_plain(v))

    def finish(self) -> None:
        self._writer.flush()


class AvroFormat(Format):
    needs_schema = True

    def __init__(self, *, codec: str) -> None:
        self._codec = codec
        self._parsed: dict[int, tuple[Schema, Any]] = {}

    @property
    def extension(self) -> str:
        return ".avro"

    def writer(self, sink: Sink, schema: Schema | None) -> FileWriter:
        if schema is None:
            raise DataError("AvroFormat needs records with a value schema")
        cached = self._parsed.get(id(schema))
        if cached is None or cached[0] is not schema:
            parsed = fastavro.parse_schema(to_avro_schema(schema))
            cached = self._parsed[id(schema)] = (schema, parsed)
        return _AvroWriter(sink, schema, cached[1], self._codec)

    def read(self, data: bytes) -> tuple[Schema | None, list[Any]]:
        reader = fastavro.reader(io.BytesIO(data))
        meta = reader.metadata.get(METADATA_KEY)
        schema = schema_from_json(meta) if meta else from_avro_schema(reader.writer_schema)
        records = list(reader)
        if schema.type is Type.STRUCT:
            return schema, [to_struct(schema, r) for r in records]
        if needs_nesting(schema):  # e.g. an array of structs (a `.headers` object)
            return schema, [from_plain(schema, r) for r in records]
        return schema, records


def from_avro_schema(avro: Any, *, optional: bool = False) -> Schema:
    """A Connect schema for an Avro schema written by another tool (GENERIC mode)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise DataError("only unions of null and one type map to Connect schemas")
        return from_avro_schema(branches[0], optional=True)
    if isinstance(avro, str):
        avro = {"type": avro}
    t = avro["type"]
    if isinstance(t, (dict, list)):
        return from_avro_schema(t, optional=optional)
    logical = avro.get("logicalType")
    if logical == "decimal":
        return Decimal.schema(int(avro.get("scale", 0)), optional=optional)
    if logical == "date":
        return Date.schema(optional=optional)
    if logical == "time-millis":
        return Time.schema(optional=optional)
    if logical in ("timestamp-millis", "timestamp-micros"):
        return Timestamp.schema(optional=optional)
    simple = {
        "int": Type.INT32,
        "long": Type.INT64,
        "float": Type.FLOAT32,
        "double": Type.FLOAT64,
        "boolean": Type.BOOLEAN,
        "string": Type.STRING,
        "bytes": Type.BYTES,
        "enum": Type.STRING,
        "fixed": Type.BYTES,
    }
    if t in simple:
        kind = avro.get("connect.type")
        return Schema(Type(kind) if kind else simple[t], optional=optional)
    if t == "array":
        return Schema.array(from_avro_schema(avro["items"]), optional=optional)
    if t == "map":
        from connect.api import STRING_SCHEMA

        return Schema.map(STRING_SCHEMA, from_avro_schema(avro["values"]), optional=optional)
    if t == "record":
        return Schema.struct(
            [(f["name"], from_avro_schema(f["type"])) for f in avro["fields"]],
            name=avro.get("name"),
            optional=optional,
        )
    raise DataError(f"Avro type {t!r} has no Connect schema")
