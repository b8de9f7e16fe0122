"""JsonConverter: Kafka's `org.apache.kafka.connect.json.JsonConverter`, byte for byte.

With `schemas.enable=true` (the default) every message is the envelope

    {"schema":<schema JSON>,"payload":<value JSON>}

written compactly with the schema first, exactly as a Java worker writes it, so topics
written by either can be read by the other and compacted keys hash the same. With
`schemas.enable=false` a message is the plain JSON of the value, and reading infers
plain Python values (schema None), as Kafka's schemaless mode does.

Nulls: a null value with a null schema is a tombstone (no bytes); reading no bytes, or
empty bytes, gives `SchemaAndValue(None, None)`; `{"schema":null,"payload":null}` reads
as the same. Malformed JSON, a missing envelope, or a value that does not fit its
schema raise `ConversionError` (a DataError naming the topic), which routes the record
to the dead-letter queue.

Speed. The per-record Python cost bounds pipeline throughput, so:

- the schema JSON of each Schema object is rendered once (cached, up to
  `schemas.cache.size`), and a message is `prefix + orjson.dumps(payload) + "}"`;
- values are checked and shaped by encoders compiled once per schema
  (`connect.api.json_values`), and a payload whose type passes through unchanged (a
  string for a string schema) skips even that in the batch path;
- reading remembers the exact byte prefix `{"schema":<schema JSON>,"payload":` of the
  schemas it has seen: a message that starts with a known prefix is parsed from the
  payload on, without parsing its schema again. Anything else takes the general path,
  which parses the whole envelope (and learns the prefix when it re-renders to the
  same bytes, as Kafka's output does);
- `to_arrow` hands runs of envelopes to Arrow's JSON reader
  (`connect.api.json_arrow_read`), for sinks that take Arrow batches: no Python object
  per message at all.

It is also a HeaderConverter (as in Kafka): `configure(configs)` without `is_key`
reads `converter.type` (default `header`).
"""

from __future__ import annotations

import decimal as _decimal
import json as _stdlib_json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from connect.api.config import ConfigDef, ConfigType, Importance, at_least, one_of
from connect.api.data import Schema
from connect.api.errors import DataError
from connect.api.headers import Headers
from connect.api.json_decoders import compile_decoder
from connect.api.json_schema import schema_from_json, schema_to_json
from connect.api.json_values import (
    OWNED,
    Decoder,
    Encoder,
    NeedsExactDecimal,
    compile_encoder,
    dumps_schemaless,
    encode_schemaless,
)
from connect.api.plugins import SchemaAndValue
from connect.converters._base import CONVERTER_TYPE_CONFIG as CONVERTER_TYPE_CONFIG
from connect.converters._base import DataHeaderConverter, converter_type, define_type
from connect.converters._batch import pairs
from connect.converters.errors import FROM_BYTES, TO_BYTES, ConversionError
from connect.converters.json_columns import BatchWriter, Fallback, compile_batch_writer
from connect.converters.json_columns_read import BatchDecoder, compile_batch_decoder

if TYPE_CHECKING:  # pyarrow loads only in processes that take the columnar paths
    from connect.api.json_arrow_read import JsonArrowReader

__all__ = ["JsonConverter"]

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_ENABLE_DOC = "Include schemas within each of the serialized values and keys."
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
SCHEMAS_CACHE_SIZE_DOC = (
    "The maximum number of schemas that can be cached in this converter instance."
)
DECIMAL_FORMAT_CONFIG = "decimal.format"
DECIMAL_FORMAT_DOC = (
    "Controls which format this converter will serialize decimals in. This value is case "
    "insensitive and can be either 'BASE64' (default) or 'NUMERIC'"
)
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
REPLACE_NULL_WITH_DEFAULT_DOC = (
    "Whether to replace fields that have a default value and that are null to the default "
    "value. When set to true, the default value is used, otherwise null is used."
)
CONVERTER_TYPE_DOC = (
    "How this converter will be used: key, value or header. Set by the worker; a "
    "converter configured as a header converter without it is a header converter."
)

_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_NULL = SchemaAndValue(None, None)
_new_pair = tuple.__new__  # builds SchemaAndValue tuples in C (its __new__ is Python)
_MAX_PREFIXES = 8
_ENVELOPE_KEYS = {"schema", "payload"}


class _Writer(NamedTuple):
    prefix: bytes  # b'{"schema":<json>,"payload":' (or b"" without schemas)
    suffix: bytes
    encode: Encoder
    passthrough: type | None
    write_batch: BatchWriter


class _Reader(NamedTuple):
    prefix: bytes
    schema: Schema
    decode: Decoder


def config_def() -> ConfigDef:
    """The JsonConverter's keys (Kafka's JsonConverterConfig)."""
    return define_type(
        ConfigDef()
        .define(
            SCHEMAS_ENABLE_CONFIG,
            ConfigType.BOOLEAN,
            True,
            None,
            Importance.HIGH,
            SCHEMAS_ENABLE_DOC,
            group="Schemas",
            order_in_group=1,
            display_name="Enable Schemas",
        )
        .define(
            SCHEMAS_CACHE_SIZE_CONFIG,
            ConfigType.INT,
            1000,
            at_least(0),
            Importance.HIGH,
            SCHEMAS_CACHE_SIZE_DOC,
            group="Schemas",
            order_in_group=2,
            display_name="Schema Cache Size",
        )
        .define(
            DECIMAL_FORMAT_CONFIG,
            ConfigType.STRING,
            "BASE64",
            one_of("BASE64", "NUMERIC"),
            Importance.LOW,
            DECIMAL_FORMAT_DOC,
            group="Serialization",
            order_in_group=1,
            display_name="Decimal Format",
        )
        .define(
            REPLACE_NULL_WITH_DEFAULT_CONFIG,
            ConfigType.BOOLEAN,
            True,
            None,
            Importance.LOW,
            REPLACE_NULL_WITH_DEFAULT_DOC,
            group="Serialization",
            order_in_group=2,
            display_name="Replace null with default",
        ),
        CONVERTER_TYPE_DOC,
    )


class JsonConverter(DataHeaderConverter):
    """Connect data ⇄ JSON bytes in Kafka's format (see the module docstring)."""

    def __init__(self) -> None:
        self.schemas_enabled = True
        self.numeric_decimals = False
        self.replace_null_with_default = True
        self.converter_type = "value"
        self._cache_size = 1000
        self._writers: dict[Schema, _Writer] = {}
        self._last_schema: Schema | None = None
        self._last_writer: _Writer | None = None
        self._schemas_by_json: dict[bytes, tuple[Schema, Decoder]] = {}
        self._readers: list[_Reader] = []
        self._batch_decoders: dict[Decoder, BatchDecoder] = {}
        self._arrow_reader: JsonArrowReader | None = None

    def config(self) -> ConfigDef:
        return config_def()

    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """As a key or value converter the worker passes `is_key`; as a header converter
        it does not, and `converter.type` (default `header`) says which it is."""
        parsed = config_def().parse(configs)
        self.schemas_enabled = parsed[SCHEMAS_ENABLE_CONFIG]
        self._cache_size = max(1, parsed[SCHEMAS_CACHE_SIZE_CONFIG])
        self.numeric_decimals = parsed[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC"
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self.converter_type = converter_type(parsed, is_key)
        self._writers.clear()
        self._last_schema = self._last_writer = None
        self._schemas_by_json.clear()
        self._readers.clear()
        self._batch_decoders.clear()
        self._arrow_reader = None

    # ------------------------------------------------------------ Connect → bytes

    def _writer(self, schema: Schema) -> _Writer:
        if schema is self._last_schema:
            assert self._last_writer is not None
            return self._last_writer
        writer = self._writers.get(schema)
        if writer is None:
            encode = compile_encoder(
                schema,
                numeric_decimals=self.numeric_decimals,
                replace_null=self.replace_null_with_default,
            )
            if self.schemas_enabled:
                schema_json = orjson.dumps(
                    schema_to_json(schema, numeric_decimals=self.numeric_decimals)
                )
                prefix, suffix = b'{"schema":' + schema_json + b',"payload":', b"}"
            else:
                prefix = suffix = b""
            batch = compile_batch_writer(
                schema,
                numeric_decimals=self.numeric_decimals,
                replace_null=self.replace_null_with_default,
            )
            writer = _Writer(prefix, suffix, encode, getattr(encode, "passthrough", None), batch)
            if len(self._writers) >= self._cache_size:
                del self._writers[next(iter(self._writers))]
            self._writers[schema] = writer
        self._last_schema, self._last_writer = schema, writer
        return writer

    def from_connect_data(
        self,
        topic: str,
        schema: Schema | None,
        value: Any,
        headers: Headers | None = None,
    ) -> bytes | None:
        if schema is None:
            if value is None:
                return None  # a tombstone stays a tombstone
            try:
                body = encode_schemaless(value)
            except (DataError, TypeError) as exc:
                raise ConversionError(topic, str(exc), direction=TO_BYTES) from exc
            if self.schemas_enabled:
                return b'{"schema":null,"payload":' + body + b"}"
            return body
        try:
            writer = self._writer(schema)
            if writer.prefix:
                return writer.prefix + orjson.dumps(writer.encode(value)) + writer.suffix
            return orjson.dumps(writer.encode(value), option=OWNED)[:-1]
        except (DataError, TypeError) as exc:
            raise ConversionError(topic, str(exc), direction=TO_BYTES) from exc

    def from_connect_batch(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        """One schema for the whole batch (the usual case) takes a single pass with the
        schema's cached prefix; mixed schemas go record by record."""
        n = len(values)
        if n == 0 or len(schemas) != n:
            return super().from_connect_batch(topic, schemas, values)
        first = schemas[0]
        if first is None and schemas.count(None) == n and None not in values:
            try:
                bodies = list(map(dumps_schemaless, values))
            except TypeError:  # Kafka's forms that orjson does not write, or an error
                pass
            else:
                if not self.schemas_enabled:
                    return [b[:-1] for b in bodies]
                return [b'{"schema":null,"payload":' + b[:-1] + b"}" for b in bodies]
        if first is None or schemas.count(first) != n:
            return self._by_schema(topic, schemas, values)
        dumps = orjson.dumps
        try:
            prefix, suffix, encode, passthrough, write_batch = self._writer(first)
            if passthrough is not None and set(map(type, values)) == {passthrough}:
                if prefix:
                    return [prefix + dumps(v) + suffix for v in values]
                return [dumps(v, option=OWNED)[:-1] for v in values]
            try:
                bodies = write_batch(values if type(values) is list else list(values))
            except Fallback:
                pass  # value by value below, which names the first bad record
            else:
                if prefix:
                    return [prefix + b + suffix for b in bodies]
                return bodies
            if prefix:
                return [prefix + dumps(encode(v)) + suffix for v in values]
            return [dumps(encode(v), option=OWNED)[:-1] for v in values]
        except (DataError, TypeError) as exc:
            raise ConversionError(topic, str(exc), direction=TO_BYTES) from exc

    def _by_schema(
        self, topic: str, schemas: Sequence[Schema | None], values: Sequence[Any]
    ) -> list[bytes | None]:
        """A batch of a few schemas (a CDC stream's envelopes and the tombstones after
        its deletes) as one batch per schema; many schemas go record by record."""
        groups: dict[int, tuple[Schema | None, list[int]]] = {}
        for i, schema in enumerate(schemas):
            group = groups.get(id(schema))
            if group is None:
                if len(groups) == 8:
                    return [
                        self.from_connect_data(topic, s, v)
                        for s, v in zip(schemas, values, strict=True)
                    ]
                group = groups[id(schema)] = (schema, [])
            group[1].append(i)
        out: list[bytes | None] = [None] * len(values)
        for schema, indexes in groups.values():
            part = [values[i] for i in indexes]
            if schema is None:
                written = [self.from_connect_data(topic, None, v) for v in part]
            else:
                written = self.from_connect_batch(topic, [schema] * len(part), part)
            for i, body in zip(indexes, written, strict=True):
                out[i] = body
        return out

    def from_arrow(self, topic: str, schema: Schema, columns: Any) -> list[bytes] | None:
        """A struct schema's Arrow columns written a column at a time
        (`json_arrow_write`), byte for byte what `from_connect_batch` writes; None
        (record by record) for what it cannot write exactly, including bad values,
        so that the record path names them."""
        from connect.converters.json_arrow_write import write_arrow

        try:
            writer = self._writer(schema)
        except DataError:
            return None
        return write_arrow(
            schema,
            columns,
            numeric_decimals=self.numeric_decimals,
            replace_null=self.replace_null_with_default,
            prefix=writer.prefix,
            suffix=writer.suffix,
        )

    # ------------------------------------------------------------ bytes → Connect

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None or len(data) == 0:
            return _NULL
        if type(data) is not bytes:
            data = bytes(data)
        if self.schemas_enabled:
            for prefix, schema, decode in self._readers:
                if data.startswith(prefix):
                    if data.endswith(b"}"):
                        try:
                            payload = orjson.loads(data[len(prefix) : -1])
                        except orjson.JSONDecodeError:
                            break  # not a plain envelope: the general path says why
                        try:
                            return _new_pair(SchemaAndValue, (schema, decode(payload)))
                        except NeedsExactDecimal:
                            break
                        except DataError as exc:
                            raise ConversionError(topic, str(exc), direction=FROM_BYTES) from exc
                    break
        return self._read(topic, data)

    def _read(self, topic: str, data: bytes) -> SchemaAndValue:
        """The general path: parse everything, learn the schema's prefix."""
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ConversionError(topic, f"malformed JSON: {exc}", direction=FROM_BYTES) from exc
        try:
            return self._from_parsed(data, parsed, exact=False)
        except NeedsExactDecimal:
            # A NUMERIC Decimal: parse again keeping every digit of the numbers.
            parsed = _stdlib_json.loads(data, parse_float=_decimal.Decimal)
            return self._from_parsed(data, parsed, exact=True, topic=topic)
        except DataError as exc:
            raise ConversionError(topic, str(exc), direction=FROM_BYTES) from exc

    def _from_parsed(
        self, data: bytes, parsed: Any, *, exact: bool, topic: str = ""
    ) -> SchemaAndValue:
        if not self.schemas_enabled:
            return SchemaAndValue(None, parsed)
        if type(parsed) is not dict or len(parsed) != 2 or parsed.keys() != _ENVELOPE_KEYS:
            raise DataError(_ENVELOPE_ERROR)
        node, payload = parsed["schema"], parsed["payload"]
        if node is None:
            return SchemaAndValue(None, payload)
        try:
            if exact:
                schema = schema_from_json(node)
                assert schema is not None
                decode = compile_decoder(schema, replace_null=self.replace_null_with_default)
                return SchemaAndValue(schema, decode(payload))
            schema, decode = self._schema_of(data, node)
            return SchemaAndValue(schema, decode(payload))
        except DataError as exc:
            if exact:
                raise ConversionError(topic, str(exc), direction=FROM_BYTES) from exc
            raise

    def _batch_decoder(self, schema: Schema, decode: Decoder) -> BatchDecoder:
        """The column decoder beside a schema's value decoder (made on first use)."""
        batch = self._batch_decoders.get(decode)
        if batch is None:
            if len(self._batch_decoders) >= self._cache_size:
                self._batch_decoders.clear()
            batch = compile_batch_decoder(schema, replace_null=self.replace_null_with_default)
            self._batch_decoders[decode] = batch
        return batch

    def _schema_of(self, data: bytes, node: Any) -> tuple[Schema, Decoder]:
        key = orjson.dumps(node)
        known = self._schemas_by_json.get(key)
        if known is None:
            schema = schema_from_json(node)
            assert schema is not None
            known = (schema, compile_decoder(schema, replace_null=self.replace_null_with_default))
            if len(self._schemas_by_json) >= self._cache_size:
                del self._schemas_by_json[next(iter(self._schemas_by_json))]
            self._schemas_by_json[key] = known
        prefix = b'{"schema":' + key + b',"payload":'
        if data.startswith(prefix) and not any(r.prefix == prefix for r in self._readers):
            self._readers.insert(0, _Reader(prefix, *known))
            del self._readers[_MAX_PREFIXES:]
        return known

    def to_arrow(self, topic: str, data: Sequence[bytes | None]) -> list[Any] | None:
        """Schema envelopes decoded by Arrow's JSON reader a run at a time
        (`connect.api.json_arrow_read`, strict: the columns hold what `to_connect_batch` would
        give). None — record by record — without `schemas.enable` (schemaless JSON has
        no schema to lay columns out by) and for what columns cannot express exactly:
        messages without the envelope, maps, decimals or defaults inside nested
        values. Bad messages raise ConversionError; the runtime then converts record
        by record as well, so the record path names the bad one."""
        if not self.schemas_enabled:
            return None
        from connect.api.json_arrow_read import JsonArrowReader, NotColumnar

        reader = self._arrow_reader
        if reader is None:
            reader = self._arrow_reader = JsonArrowReader(
                strict=True,
                replace_null_with_default=self.replace_null_with_default,
                cache_size=self._cache_size,
            )
        try:
            return list(reader.read(data))
        except NotColumnar:
            return None
        except DataError as exc:
            raise ConversionError(topic, str(exc), direction=FROM_BYTES) from exc

    def to_connect_batch(self, topic: str, data: Sequence[bytes | None]) -> list[SchemaAndValue]:
        """Without schemas: one orjson call per message. With schemas: messages that all
        start with the most recent schema's prefix are parsed from the payload on; any
        other batch goes message by message."""
        n = len(data)
        if n == 0:
            return []
        loads = orjson.loads
        if not self.schemas_enabled:
            try:
                values = list(map(loads, data))
            except (TypeError, orjson.JSONDecodeError):
                return [self.to_connect_data(topic, d) for d in data]
            return pairs(None, values)
        if not self._readers:
            head = [self.to_connect_data(topic, data[0])]
            return head + self.to_connect_batch(topic, data[1:]) if n > 1 else head
        prefix, schema, decode = self._readers[0]
        start = len(prefix)
        try:
            payloads = [
                loads(d[start:-1]) for d in data if d.startswith(prefix) and d.endswith(b"}")
            ]
        except (AttributeError, TypeError, orjson.JSONDecodeError):
            payloads = []
        if len(payloads) != n:
            return [self.to_connect_data(topic, d) for d in data]
        passthrough = getattr(decode, "passthrough", None)
        try:
            if passthrough is None or set(map(type, payloads)) != {passthrough}:
                try:
                    payloads = self._batch_decoder(schema, decode)(payloads)
                except Fallback:  # value by value, which says what is wrong
                    payloads = list(map(decode, payloads))
        except NeedsExactDecimal:
            return [self.to_connect_data(topic, d) for d in data]
        except DataError as exc:
            raise ConversionError(topic, str(exc), direction=FROM_BYTES) from exc
        return pairs(schema, payloads)
