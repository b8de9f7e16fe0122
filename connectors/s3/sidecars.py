"""Objects beside each data object: the records' keys (`store.kafka.keys`) and headers
(`store.kafka.headers`), one entry per record in the data object's order, named as
Confluent's S3 sink names them — the data object's name without its extension, then
`.keys` or `.headers` and the extension of `keys.format.class` /
`headers.format.class`:

    topics/orders/partition=0/orders+0+0000000042.json
    topics/orders/partition=0/orders+0+0000000042.keys.avro
    topics/orders/partition=0/orders+0+0000000042.headers.avro

Entries (Confluent's record views):
- keys: the key, with the record's key schema (made optional: a null key is a key);
- headers: an array of `{key: string, value: string}` structs, the value as text in
  Kafka's `Values` conventions (strings as themselves, numbers and booleans as
  written, bytes as base64, structures as JSON); null header values stay null.

Parquet objects must hold structs, so there (as in Confluent's) each entry is wrapped:
a `RecordKey` struct with a `key` field, a `RecordHeaders` struct with `headers`.

A restore reads the entries back (`restore_key`, `restore_headers`): keys with their
schema; headers as string headers, which the worker's header converter turns back into
bytes — the original bytes whenever the header was text (use `StringConverter` as
`header.converter` on both sides for text headers that only look like numbers).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
from collections.abc import Sequence
from typing import Any

import orjson

from connect.api import (
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    DataError,
    Headers,
    Schema,
    SinkRecord,
    Struct,
    Type,
)
from connectors.s3.config import LayoutSettings
from connectors.s3.formats import Format, make_format

__all__ = [
    "HEADERS_SCHEMA",
    "Sidecar",
    "make_sidecars",
    "restore_headers",
    "restore_key",
]

HEADER_SCHEMA = Schema.struct([("key", STRING_SCHEMA), ("value", OPTIONAL_STRING_SCHEMA)])
HEADERS_SCHEMA = Schema.array(HEADER_SCHEMA)
_ENVELOPED_HEADERS = Schema.struct([("headers", HEADERS_SCHEMA)], name="RecordHeaders")
#: Header and key structs here are built from strings made for their fields.
_struct = Struct.trusted


def header_text(value: Any) -> str | None:
    """A header value as text, in Kafka's `Values` conventions (see the docstring)."""
    if value is None or type(value) is str:
        return value
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return orjson.dumps(value, default=_plain).decode()


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: value.get(f.name) for f in value.schema.fields}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


class Sidecar:
    """One kind of object beside the data objects (see the module docstring)."""

    #: Added to the data object's name without its extension (`.keys`, `.headers`).
    suffix = ""
    #: Whether the entries' schema follows the records' key schema (a change of it
    #: starts new objects).
    follows_key_schema = False

    def __init__(self, fmt: Format, *, envelope: bool) -> None:
        self.format = fmt
        self.envelope = envelope

    def schema(self, key_schema: Schema | None) -> Schema | None:
        raise NotImplementedError

    def entries(self, records: Sequence[SinkRecord]) -> list[Any]:
        """The entries of a run of records (same key schema), in order."""
        raise NotImplementedError


class KeysSidecar(Sidecar):
    suffix = ".keys"
    follows_key_schema = True

    def schema(self, key_schema: Schema | None) -> Schema | None:
        if key_schema is None:
            if self.envelope:
                raise DataError(
                    "ParquetFormat writes keys with a key schema only (set a "
                    "key.converter that gives one, or another keys.format.class)"
                )
            return None
        optional = key_schema.optional_()
        if not self.envelope:
            return optional
        return Schema.struct([("key", optional)], name="RecordKey")

    def entries(self, records: Sequence[SinkRecord]) -> list[Any]:
        keys = [r.key for r in records]
        if not self.envelope or not records:
            return keys
        schema = self.schema(records[0].key_schema)
        assert schema is not None
        return [_struct(schema, [k]) for k in keys]


class HeadersSidecar(Sidecar):
    suffix = ".headers"

    def schema(self, key_schema: Schema | None) -> Schema | None:
        return _ENVELOPED_HEADERS if self.envelope else HEADERS_SCHEMA

    def entries(self, records: Sequence[SinkRecord]) -> list[Any]:
        out = [
            [_struct(HEADER_SCHEMA, [h.key, header_text(h.value)]) for h in r.headers]
            for r in records
        ]
        if self.envelope:
            return [_struct(_ENVELOPED_HEADERS, [entry]) for entry in out]
        return out


def make_sidecars(layout: LayoutSettings) -> tuple[Sidecar, ...]:
    """The sidecars a layout asks for: keys first, then headers."""
    import dataclasses

    out: list[Sidecar] = []
    for wanted, kind, fmt_name in (
        (layout.store_keys, KeysSidecar, layout.keys_format),
        (layout.store_headers, HeadersSidecar, layout.headers_format),
    ):
        if wanted:
            fmt = make_format(dataclasses.replace(layout, format=fmt_name))
            out.append(kind(fmt, envelope=fmt_name == "parquet"))
    return tuple(out)


def _field(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, (Struct, dict)) else entry


def restore_key(schema: Schema | None, entry: Any) -> tuple[Schema | None, Any]:
    """(key schema, key) of a keys entry as read back from its object."""
    if schema is not None and schema.type is Type.STRUCT and schema.name == "RecordKey":
        field = schema.field("key")
        return (field.schema if field is not None else None), _field(entry, "key")
    return schema, entry


def restore_headers(entry: Any) -> Headers:
    """The string headers of a headers entry as read back from its object."""
    if isinstance(entry, (Struct, dict)):  # enveloped (Parquet)
        entry = _field(entry, "headers")
    headers = Headers()
    for header in entry or ():
        value = _field(header, "value")
        headers.add(
            str(_field(header, "key")),
            value,
            OPTIONAL_STRING_SCHEMA if value is None else STRING_SCHEMA,
        )
    return headers
