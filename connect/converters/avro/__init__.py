"""The Avro converter: Connect data ⇄ Avro in Confluent's wire format, with its schemas
kept in a schema registry (ours or any Confluent-compatible one).

Wire format (what Confluent's serializers write and read, byte for byte):

    byte 0      magic byte 0
    bytes 1-4   the schema's global registry id, a 4-byte big-endian integer
    bytes 5-    the Avro binary encoding of the value (fastavro's "schemaless"
                encoding: no container header, no sync markers); a value whose schema
                is exactly the primitive `bytes` is written raw, without a length

A null value is a tombstone: no bytes, and no bytes read back as null.

Writing a record: its Connect schema is mapped to an Avro schema (`schema`), the Avro
JSON is registered under the subject the subject name strategy names (`strategies`),
and the id goes into the header. Reading: the id is looked up, the Avro schema mapped
back to a Connect schema (`schema_read`), and the payload decoded with it.

Caching — the hot path makes no registry call and no schema mapping per record:

1. Connect schema → (Avro JSON, text): keyed by the schema object's identity
   (`id(schema)`, holding a reference so the id stays unique while cached).
2. (topic, schema object) → writer: header bytes, fastavro's parsed schema and the
   compiled value encoder (`values`). The batch path looks it up once per batch.
3. schema id → reader: Connect schema, parsed Avro schema, compiled decoder.
4. Under those, `CachedSchemaRegistryClient` remembers (subject, schema text) → id
   and id → text, so a schema equal to one already seen (a new but equal object)
   costs a mapping but no HTTP request: one register per distinct schema and subject.

Every cache holds at most `schemas.cache.size` entries (oldest out first). Errors: a
record that cannot be converted (bad magic byte, fewer than 5 bytes, an id the registry
does not know, an undecodable payload, a value that does not fit its schema, a schema
the registry refuses) raises ConversionError, a DataError, so the worker sends it to
the dead-letter queue when `errors.tolerance=all`; an unreachable registry raises
RegistryUnavailableError, a RetriableError, so the worker retries instead.
"""

from __future__ import annotations

from connect.converters.avro.client import (
    CachedSchemaRegistryClient,
    HttpSchemaRegistryClient,
    MemorySchemaRegistryClient,
    RegisteredSchema,
    RegistryClientError,
    RegistryUnavailableError,
    SchemaNotFoundError,
    SchemaRegistryClient,
    client_for,
    set_embedded_factory,
)
from connect.converters.avro.converter import AvroConverter
from connect.converters.avro.schema import to_avro
from connect.converters.avro.schema_read import to_connect
from connect.converters.avro.strategies import (
    record_name_strategy,
    strategy_named,
    topic_name_strategy,
    topic_record_name_strategy,
)

__all__ = [
    "AvroConverter",
    "CachedSchemaRegistryClient",
    "HttpSchemaRegistryClient",
    "MemorySchemaRegistryClient",
    "RegisteredSchema",
    "RegistryClientError",
    "RegistryUnavailableError",
    "SchemaNotFoundError",
    "SchemaRegistryClient",
    "client_for",
    "record_name_strategy",
    "set_embedded_factory",
    "strategy_named",
    "to_avro",
    "to_connect",
    "topic_name_strategy",
    "topic_record_name_strategy",
]
