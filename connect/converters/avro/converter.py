"""AvroConverter: Connect data ⇄ Confluent's Avro wire format (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from io import BytesIO
from typing import Any, NamedTuple

import orjson
import pyarrow as pa
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from connect.api.arrow import schema_of
from connect.api.config import ConfigDef
from connect.api.data import Schema
from connect.api.errors import ConfigError, DataError
from connect.api.headers import Headers
from connect.api.plugins import Converter, SchemaAndValue
from connect.converters._batch import pairs

# The columnar paths' modules are imported with the converter, not on its first batch
# (a sink's first poll): they add a few ms to pyarrow, which this module imports anyway.
from connect.converters.avro.arrow_read import decode as decode_columns
from connect.converters.avro.arrow_read import frame
from connect.converters.avro.arrow_write import Slot, plan_fields
from connect.converters.avro.arrow_write import encode as encode_columns
from connect.converters.avro.client import (
    CachedSchemaRegistryClient,
    RegistryClientError,
    SchemaRegistryClient,
    client_for,
)
from connect.converters.avro.config import (
    AUTO_REGISTER_SCHEMAS_CONFIG,
    BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG,
    BASIC_AUTH_USER_INFO_ALIAS,
    BASIC_AUTH_USER_INFO_CONFIG,
    ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG,
    KEY_SUBJECT_NAME_STRATEGY_CONFIG,
    LATEST_CACHE_TTL_CONFIG,
    LATEST_COMPATIBILITY_STRICT_CONFIG,
    SCHEMA_REGISTRY_URL_CONFIG,
    SCHEMAS_CACHE_SIZE_CONFIG,
    USE_LATEST_VERSION_CONFIG,
    VALUE_SUBJECT_NAME_STRATEGY_CONFIG,
    config_def,
)
from connect.converters.avro.schema import record_full_name, to_avro
from connect.converters.avro.schema_read import to_connect
from connect.converters.avro.strategies import SubjectNameStrategy, strategy_named
from connect.converters.avro.values import Codec, compile_decoder, compile_encoder
from connect.converters.errors import FROM_BYTES, TO_BYTES, ConversionError

__all__ = ["AvroConverter"]

MAGIC_BYTE = 0
HEADER_SIZE = 5  # magic byte + 4-byte big-endian schema id
_NULL = SchemaAndValue(None, None)
_new_pair = tuple.__new__
# Logical types Connect maps; fastavro converts the others too, so they are removed
# from the schema fastavro reads with (same bytes, raw values), as Connect reads them.
_CONNECT_LOGICAL = {
    ("bytes", "decimal"),
    ("fixed", "decimal"),
    ("int", "date"),
    ("int", "time-millis"),
    ("long", "timestamp-millis"),
}


class _Writer(NamedTuple):
    schema: Schema  # kept so its id() cannot be reused while cached
    header: bytes  # magic byte + schema id
    parsed: Any  # fastavro's parsed writer schema
    encode: Codec | None
    raw_bytes: bool  # the schema is exactly "bytes": no Avro length prefix


class _Reader(NamedTuple):
    schema: Schema
    parsed: Any
    decode: Codec | None
    raw_bytes: bool
    batch_parsed: Any  # an array of (header, value) records: see to_connect_batch


def _strip_foreign_logical_types(avro: Any) -> Any:
    if isinstance(avro, list):
        return [_strip_foreign_logical_types(a) for a in avro]
    if not isinstance(avro, dict):
        return avro
    out = {}
    for k, v in avro.items():
        if k == "logicalType" and (avro.get("type"), v) not in _CONNECT_LOGICAL:
            continue
        if k in ("type", "items", "values"):
            v = _strip_foreign_logical_types(v)
        elif k == "fields":
            v = [{**f, "type": _strip_foreign_logical_types(f["type"])} for f in v]
        out[k] = v
    return out


def compatibility_reasons(*, reader: str, writer: str) -> list[str] | None:
    """Why `reader` cannot read `writer` data (empty: it can), from the registry's own
    Avro checker (Avro Java's rules); None when that package is not installed."""
    try:
        from connect.registry.avro import AvroSchema, check_compatibility
    except ImportError:
        return None
    return [
        str(reason)
        for reason in check_compatibility(
            reader=AvroSchema.parse(reader), writer=AvroSchema.parse(writer)
        )
    ]


class AvroConverter(Converter):
    """Connect data ⇄ Avro in Confluent's wire format, schemas in a registry.

    Pass `client` to use a registry client directly (tests); otherwise
    `schema.registry.url` chooses one. Either way a cache sits in front of it."""

    # `arrow_read.frame` takes a log batch's values as they are stored, end to end.
    to_arrow_takes_binary_array = True

    def __init__(self, client: SchemaRegistryClient | None = None) -> None:
        self._given_client = client
        self.client: CachedSchemaRegistryClient | None = None
        self.is_key = False
        self._strategy: SubjectNameStrategy = strategy_named("TopicNameStrategy", config_name="")
        self._auto_register = True
        self._use_latest = False
        self._latest_strict = True
        self._enhanced = False
        self._cache_size = 1000
        self._writers: dict[tuple[str, int], _Writer] = {}
        self._avro_by_schema: dict[int, tuple[Schema, Any, str]] = {}
        self._readers: dict[int, _Reader] = {}
        # The columnar paths' plans, beside the writer or reader they were made for.
        self._arrow_writers: dict[int, tuple[_Writer, list[Slot] | None]] = {}
        self._arrow_readers: dict[int, tuple[_Reader, list[Slot] | None, Any]] = {}

    def config(self) -> ConfigDef:
        return config_def()

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        parsed = config_def().parse(configs)
        self.is_key = is_key
        strategy_key = (
            KEY_SUBJECT_NAME_STRATEGY_CONFIG if is_key else VALUE_SUBJECT_NAME_STRATEGY_CONFIG
        )
        self._strategy = strategy_named(parsed[strategy_key], config_name=strategy_key)
        self._auto_register = parsed[AUTO_REGISTER_SCHEMAS_CONFIG]
        self._use_latest = parsed[USE_LATEST_VERSION_CONFIG]
        self._latest_strict = parsed[LATEST_COMPATIBILITY_STRICT_CONFIG]
        self._enhanced = parsed[ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG]
        self._cache_size = parsed[SCHEMAS_CACHE_SIZE_CONFIG]
        if self._use_latest and self._auto_register:
            raise ConfigError(
                USE_LATEST_VERSION_CONFIG,
                True,
                f"use.latest.version needs {AUTO_REGISTER_SCHEMAS_CONFIG}=false",
            )
        ttl = parsed[LATEST_CACHE_TTL_CONFIG]
        inner = self._given_client
        if inner is None:
            user_info = None
            if parsed[BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG] == "USER_INFO":
                secret = parsed[BASIC_AUTH_USER_INFO_CONFIG] or parsed[BASIC_AUTH_USER_INFO_ALIAS]
                user_info = secret.value if secret else None
                if not user_info:
                    raise ConfigError(
                        BASIC_AUTH_USER_INFO_CONFIG,
                        None,
                        "credentials source USER_INFO needs user:password",
                    )
            inner = client_for(
                parsed[SCHEMA_REGISTRY_URL_CONFIG] or [], user_info=user_info, configs=configs
            )
        self.client = CachedSchemaRegistryClient(
            inner, latest_ttl_s=None if ttl < 0 else float(ttl)
        )
        self._writers.clear()
        self._avro_by_schema.clear()
        self._readers.clear()
        self._arrow_writers.clear()
        self._arrow_readers.clear()

    def close(self) -> None:
        inner = self.client.inner if self.client is not None else None
        close = getattr(inner, "close", None)
        if close is not None and self._given_client is None:
            close()

    # ------------------------------------------------------------ Connect → bytes

    def _client(self) -> CachedSchemaRegistryClient:
        if self.client is None:
            raise ConfigError(SCHEMA_REGISTRY_URL_CONFIG, None, "the converter is not configured")
        return self.client

    def _avro_of(self, schema: Schema) -> tuple[Any, str]:
        known = self._avro_by_schema.get(id(schema))
        if known is not None and known[0] is schema:
            return known[1], known[2]
        avro = to_avro(schema, enhanced=self._enhanced)
        text = orjson.dumps(avro).decode()
        if len(self._avro_by_schema) >= self._cache_size:
            del self._avro_by_schema[next(iter(self._avro_by_schema))]
        self._avro_by_schema[id(schema)] = (schema, avro, text)
        return avro, text

    def _writer(self, topic: str, schema: Schema) -> _Writer:
        key = (topic, id(schema))
        writer = self._writers.get(key)
        if writer is not None and writer.schema is schema:
            return writer
        avro, text = self._avro_of(schema)
        subject = self._strategy(topic, self.is_key, record_full_name(avro))
        client = self._client()
        try:
            if self._use_latest:
                latest = client.latest(subject)
                schema_id, writer_text = latest.schema_id, latest.schema
                if self._latest_strict and writer_text != text:
                    reasons = compatibility_reasons(reader=writer_text, writer=text)
                    if reasons:
                        raise DataError(
                            f"the latest schema of subject {subject!r} (id {schema_id}) cannot "
                            f"read the record's schema: {'; '.join(reasons)}"
                        )
                writer_avro = orjson.loads(writer_text)
            elif self._auto_register:
                schema_id, writer_avro = client.register(subject, text), avro
            else:
                schema_id, writer_avro = client.lookup(subject, text), avro
        except RegistryClientError as exc:
            raise DataError(f"subject {subject!r}: {exc}") from exc
        writer = _Writer(
            schema,
            bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big"),
            parse_schema(_strip_foreign_logical_types(writer_avro)),
            compile_encoder(schema),
            writer_avro in ("bytes", {"type": "bytes"}),
        )
        if len(self._writers) >= self._cache_size:
            del self._writers[next(iter(self._writers))]
        self._writers[key] = writer
        return writer

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None:
        if value is None:
            return None  # a tombstone stays a tombstone, as Confluent's serializer
        if schema is None:
            raise ConversionError(
                topic, "AvroConverter needs a schema for a non-null value", direction=TO_BYTES
            )
        try:
            header, parsed, encode, raw_bytes = self._writer(topic, schema)[1:]
            datum = value if encode is None else encode(value)
            if raw_bytes:
                return header + datum
            buf = BytesIO()
            buf.write(header)
            schemaless_writer(buf, parsed, datum)
            return buf.getvalue()
        except (DataError, ValueError, TypeError, AttributeError, KeyError, ArithmeticError) as exc:
            raise ConversionError(topic, _reason(exc), direction=TO_BYTES) from exc

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        """One schema object for the whole batch and no nulls (the usual case): one
        writer lookup, then a tight loop writing every record into one buffer, cut
        into messages at the end. Anything else goes record by record."""
        n = len(values)
        if n == 0:
            return []
        first = schemas[0]
        if first is None or len(schemas) != n or schemas.count(first) != n or None in values:
            return super().from_connect_batch(topic, schemas, values)
        try:
            header, parsed, encode, raw_bytes = self._writer(topic, first)[1:]
            datums = values if encode is None else list(map(encode, values))
            if raw_bytes:
                return [header + d for d in datums]
            buf = BytesIO()
            write = buf.write
            tell = buf.tell
            ends = []
            mark = ends.append
            for datum in datums:
                write(header)
                schemaless_writer(buf, parsed, datum)
                mark(tell())
        except (DataError, ValueError, TypeError, AttributeError, KeyError, ArithmeticError) as exc:
            raise ConversionError(topic, _reason(exc), direction=TO_BYTES) from exc
        blob = buf.getbuffer()
        starts = [0, *ends[:-1]]
        out = [bytes(blob[s:e]) for s, e in zip(starts, ends, strict=True)]
        blob.release()
        return out

    def from_arrow(self, topic: str, schema: Schema, columns: Any) -> list[bytes] | None:
        """The columns' rows as messages, byte for byte what `from_connect_batch`
        writes for their values, computed a column at a time (`arrow_write`); None
        for a schema or a value that module leaves to the record path."""
        if not isinstance(columns, pa.RecordBatch):
            return None
        if columns.schema.names != [f.name for f in schema.fields]:
            return None  # `to_connect` reads the columns by field name
        if columns.num_rows == 0:
            return []
        try:
            writer = self._writer(topic, schema)
        except (DataError, ValueError, TypeError, KeyError) as exc:
            raise ConversionError(topic, _reason(exc), direction=TO_BYTES) from exc

        known = self._arrow_writers.get(id(writer))
        if known is None or known[0] is not writer:
            slots = None if writer.raw_bytes else plan_fields(schema, writer.parsed, defaults=True)
            known = (writer, slots)
            if len(self._arrow_writers) >= self._cache_size:
                del self._arrow_writers[next(iter(self._arrow_writers))]
            self._arrow_writers[id(writer)] = known
        slots = known[1]
        return None if slots is None else encode_columns(slots, writer.header, columns)

    # ------------------------------------------------------------ bytes → Connect

    def _reader(self, topic: str, schema_id: int) -> _Reader:
        reader = self._readers.get(schema_id)
        if reader is not None:
            return reader
        try:
            text = self._client().get_schema(schema_id)
        except RegistryClientError as exc:
            raise ConversionError(
                topic, f"unknown schema id {schema_id}: {exc}", direction=FROM_BYTES
            ) from exc
        try:
            avro = orjson.loads(text)
            readable = _strip_foreign_logical_types(avro)
            parsed = parse_schema(readable)
            batch_parsed = parse_schema(_batch_schema(readable))
            schema = to_connect(parsed)
        except (DataError, ValueError, TypeError, KeyError) as exc:
            raise ConversionError(
                topic, f"schema id {schema_id} has no Connect form: {exc}", direction=FROM_BYTES
            ) from exc
        reader = _Reader(
            schema,
            parsed,
            compile_decoder(schema),
            avro in ("bytes", {"type": "bytes"}),
            batch_parsed,
        )
        if len(self._readers) >= self._cache_size:
            del self._readers[next(iter(self._readers))]
        self._readers[schema_id] = reader
        return reader

    def _header(self, topic: str, data: bytes) -> int:
        if len(data) < HEADER_SIZE:
            raise ConversionError(
                topic,
                f"{len(data)} bytes are too short for the Avro wire format "
                "(magic byte and 4-byte schema id)",
                direction=FROM_BYTES,
            )
        if data[0] != MAGIC_BYTE:
            raise ConversionError(
                topic, f"Unknown magic byte {data[0]} (expected 0)", direction=FROM_BYTES
            )
        return int.from_bytes(data[1:HEADER_SIZE], "big")

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return _NULL
        schema_id = self._header(topic, data)
        schema, parsed, decode, raw_bytes, _ = self._reader(topic, schema_id)
        if raw_bytes:
            return _new_pair(SchemaAndValue, (schema, bytes(data[HEADER_SIZE:])))
        fo = BytesIO(data)
        fo.seek(HEADER_SIZE)
        try:
            datum = schemaless_reader(fo, parsed, None)
            value = datum if decode is None else decode(datum)
        except Exception as exc:  # untrusted bytes: any failure is a bad record
            raise ConversionError(
                topic,
                f"cannot decode the Avro payload of schema id {schema_id}: {_reason(exc)}",
                direction=FROM_BYTES,
            ) from exc
        return _new_pair(SchemaAndValue, (schema, value))

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        """Messages that all carry the first message's schema id are decoded in one
        fastavro call: they are laid end to end behind an Avro array count, and read as
        an array of (5-byte header as `fixed`, value) records. Every item's header must
        equal the first message's and the read must end exactly at the last byte, or
        the batch goes message by message (which names the bad one)."""
        n = len(data)
        if n == 0:
            return []
        first = data[0]
        if first is None or None in data:
            return [self.to_connect_data(topic, d) for d in data]
        schema_id = self._header(topic, first)
        prefix = bytes(first[:HEADER_SIZE])
        reader = self._reader(topic, schema_id)
        if reader.raw_bytes:
            if sum(1 for d in data if d[:HEADER_SIZE] == prefix) != n:
                return [self.to_connect_data(topic, d) for d in data]
            return pairs(reader.schema, [bytes(d[HEADER_SIZE:]) for d in data])
        blob = _long(n) + b"".join(data) + b"\x00"
        fo = BytesIO(blob)
        try:
            items = schemaless_reader(fo, reader.batch_parsed, None)
            ok = fo.tell() == len(blob)
        except Exception:  # a bad message: the one-by-one path says which
            ok = False
        if not ok or [i["h"] for i in items].count(prefix) != n:
            return [self.to_connect_data(topic, d) for d in data]
        datums = [i["v"] for i in items]
        decode = reader.decode
        try:
            values = datums if decode is None else list(map(decode, datums))
        except Exception:
            return [self.to_connect_data(topic, d) for d in data]
        return pairs(reader.schema, values)

    def to_arrow(self, topic: str, data: Sequence[bytes | None] | Any) -> list[Any] | None:
        """Runs of messages of one schema id decoded straight into columns
        (`arrow_read`), each the batch `batch_from_values` makes of what
        `to_connect_batch` reads; None when a message is malformed, its schema id
        unknown, or its schema one that module leaves to the record path."""

        framing = frame(data)
        if framing is None:
            return None
        out = []
        for schema_id, run in framing.runs():
            try:
                reader = self._reader(topic, schema_id)
            except ConversionError:
                return None  # the record path raises it for the message it belongs to
            known = self._arrow_readers.get(schema_id)
            if known is None or known[0] is not reader:
                slots = (
                    None
                    if reader.raw_bytes
                    else plan_fields(reader.schema, reader.parsed, defaults=False)
                )
                known = (reader, slots, None if slots is None else schema_of(reader.schema))
                if len(self._arrow_readers) >= self._cache_size:
                    del self._arrow_readers[next(iter(self._arrow_readers))]
                self._arrow_readers[schema_id] = known
            _, slots, arrow_schema = known
            if slots is None:
                return None
            batch = decode_columns(slots, arrow_schema, framing, run)
            if batch is None:
                return None
            out.append((reader.schema, batch, framing.rows[run]))
        return out


def _long(n: int) -> bytes:
    """`n` (≥ 0) as an Avro long: zig-zag, then base-128 varint."""
    z = n << 1
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _batch_schema(avro: Any) -> Any:
    """An array of {h: the 5-byte header, v: the value}: a batch of messages laid end
    to end behind an array count. The wrapper has no namespace, so the value's schema
    resolves its names exactly as it does on its own."""
    return {
        "type": "array",
        "items": {
            "type": "record",
            "name": "tributary_batch_message",
            "fields": [
                {
                    "name": "h",
                    "type": {
                        "type": "fixed",
                        "name": "tributary_batch_header",
                        "size": HEADER_SIZE,
                    },
                },
                {"name": "v", "type": avro},
            ],
        },
    }


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
