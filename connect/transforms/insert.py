"""InsertField ($Key / $Value): add fields with the record's topic, partition,
offset (sink records only) or timestamp, or a static string.

Each `*.field` names the field to add; a trailing `?` makes it optional in the
schema and a trailing `!` required (optional when neither is given, as in Kafka).
With a schema the timestamp is a Timestamp logical value; without one it is the raw
milliseconds. A null key or value (a tombstone) passes through untouched, so a
delete stays a delete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from connect.api import (
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataError,
    Importance,
    Schema,
    SinkRecord,
    Struct,
    Timestamp,
    Transformation,
    Type,
    validate_value,
)
from connect.transforms._util import (
    KeySide,
    SchemaCache,
    SchemaCaching,
    ValueSide,
    define_replace_null,
    field_values,
    require_map,
    require_struct,
    struct_schema,
)

__all__ = ["InsertField", "InsertFieldKey", "InsertFieldValue"]

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"
_PURPOSE = "field insertion"
_SUFFIX_DOC = " Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional (the default)."  # noqa: E501


class _Insertion(NamedTuple):
    """One field to insert: its name, schema, and how to get its value."""

    name: str
    schema: Schema
    schemaless: Callable[[ConnectRecord], Any]
    with_schema: Callable[[ConnectRecord], Any]


def _spec(text: str | None) -> tuple[str, bool] | None:
    """(field name, optional) from a `name`, `name?` or `name!` spec."""
    if text is None or not text:
        return None
    if text.endswith("?"):
        return text[:-1], True
    if text.endswith("!"):
        return text[:-1], False
    return text, True


def _offset(record: ConnectRecord) -> int:
    if not isinstance(record, SinkRecord):
        raise DataError(
            f"Only SinkRecord supported for [{_PURPOSE}] of an offset, "
            f"found: {type(record).__name__}"
        )
    return record.kafka_offset


def _timestamp(record: ConnectRecord) -> Any:
    ts = record.timestamp
    return None if ts is None else Timestamp.to_logical(Timestamp.schema(), ts)


def _string(text: str) -> Callable[[ConnectRecord], str]:
    return lambda record: text


def _key(name: str, doc: str) -> tuple[str, ConfigType, Any, None, Importance, str]:
    return (name, ConfigType.STRING, None, None, Importance.MEDIUM, doc)


class InsertField(SchemaCaching, Transformation[ConnectRecord]):
    """Insert record metadata and/or a static string as fields."""

    _CONFIG = define_replace_null(
        ConfigDef()
        .define(*_key(TOPIC_FIELD, "Field name for Kafka topic." + _SUFFIX_DOC))
        .define(*_key(PARTITION_FIELD, "Field name for Kafka partition." + _SUFFIX_DOC))
        .define(
            *_key(
                OFFSET_FIELD,
                "Field name for Kafka offset - only applicable to sink connectors." + _SUFFIX_DOC,
            )
        )
        .define(*_key(TIMESTAMP_FIELD, "Field name for record timestamp." + _SUFFIX_DOC))
        .define(*_key(STATIC_FIELD, "Field name for static data field." + _SUFFIX_DOC))
        .define(*_key(STATIC_VALUE, "Static field value, if field name configured."))
    )

    _schemas: SchemaCache[Schema]

    def __init__(self) -> None:
        super().__init__()
        self._inserts: tuple[_Insertion, ...] = ()

    def _configure(self, parsed: dict[str, Any]) -> None:
        inserts = []

        def add(key: str, schema: Schema, getter: Callable[[ConnectRecord], Any]) -> None:
            spec = _spec(parsed[key])
            if spec is not None:
                name, optional = spec
                inserts.append(_Insertion(name, schema.with_(optional=optional), getter, getter))

        add(TOPIC_FIELD, Schema(Type.STRING), lambda r: r.topic)
        add(PARTITION_FIELD, Schema(Type.INT32), lambda r: r.kafka_partition)
        add(OFFSET_FIELD, Schema(Type.INT64), _offset)
        spec = _spec(parsed[TIMESTAMP_FIELD])
        if spec is not None:
            name, optional = spec
            schema = Timestamp.schema(optional=optional)
            inserts.append(_Insertion(name, schema, lambda r: r.timestamp, _timestamp))
        add(STATIC_FIELD, Schema(Type.STRING), _string(parsed[STATIC_VALUE]))
        self._inserts = tuple(inserts)

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        value = self.operating_value(record)  # type: ignore[attr-defined]
        if value is None:
            return record
        schema = self.operating_schema(record)  # type: ignore[attr-defined]
        if schema is None:
            updated = dict(require_map(value, _PURPOSE))
            for insert in self._inserts:
                updated[insert.name] = insert.schemaless(record)
            return self.new_record(record, None, updated)  # type: ignore[attr-defined]
        struct = require_struct(value, _PURPOSE)
        extended = self._schemas.get_or_build(schema, self._extend)
        values = field_values(struct, self._replace_null)
        for insert in self._inserts:
            inserted = insert.with_schema(record)
            if inserted is None and not insert.schema.optional:
                validate_value(insert.schema, inserted, where=insert.name)
            values.append(inserted)
        return self.new_record(record, extended, Struct.trusted(extended, values))  # type: ignore[attr-defined]

    def _extend(self, schema: Schema) -> Schema:
        return struct_schema(
            schema,
            [(f.name, f.schema) for f in schema.fields]
            + [(i.name, i.schema) for i in self._inserts],
        )


class InsertFieldKey(KeySide, InsertField):
    """InsertField$Key: insert into the record key."""


class InsertFieldValue(ValueSide, InsertField):
    """InsertField$Value: insert into the record value."""


InsertField.Key = InsertFieldKey  # type: ignore[attr-defined]
InsertField.Value = InsertFieldValue  # type: ignore[attr-defined]
