"""Debezium's change-event envelope, heartbeat and key schemas, and their builders.

Value of a change event (`<prefix>.<schema>.<table>.Envelope`):

    before   optional <…>.Value   row before (updates/deletes; see REPLICA IDENTITY)
    after    optional <…>.Value   row after (creates, updates, snapshot reads)
    source   io.debezium.connector.postgresql.Source
             version, connector ("postgresql"), name (topic.prefix), ts_ms (commit
             time), snapshot ("true" | "last" | "false"), db, sequence (JSON text
             `["<last commit LSN>", "<this LSN>"]`), schema, table, txId, lsn, xmin
    op       c | u | d | r | t
    ts_ms    when the connector made the event

Key: the primary-key struct (`<…>.Key`), or null for tables without one and for
truncates. Heartbeats (`__debezium-heartbeat.<prefix>`): key
`io.debezium.connector.common.ServerNameKey {serverName}`, value
`io.debezium.connector.common.Heartbeat {ts_ms}`.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connectors.jdbc.types import (
    DBZ_INTERVAL,
    DBZ_VARIABLE_SCALE_DECIMAL,
    DBZ_ZONED_TIME,
    DBZ_ZONED_TIMESTAMP,
)

__all__ = [
    "CONNECTOR",
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "PLACEHOLDER",
    "SOURCE_SCHEMA",
    "VERSION",
    "envelope_schema",
    "zero_value",
]

VERSION = "0.1.0"
CONNECTOR = "postgresql"
# Debezium's value for an unchanged TOASTed column the row image does not carry
PLACEHOLDER = "__debezium_unavailable_value"

SOURCE_SCHEMA = Schema.struct(
    [
        ("version", STRING_SCHEMA),
        ("connector", STRING_SCHEMA),
        ("name", STRING_SCHEMA),
        ("ts_ms", INT64_SCHEMA),
        ("snapshot", OPTIONAL_STRING_SCHEMA.with_(default="false")),
        ("db", STRING_SCHEMA),
        ("sequence", OPTIONAL_STRING_SCHEMA),
        ("schema", STRING_SCHEMA),
        ("table", STRING_SCHEMA),
        ("txId", OPTIONAL_INT64_SCHEMA),
        ("lsn", OPTIONAL_INT64_SCHEMA),
        ("xmin", OPTIONAL_INT64_SCHEMA),
    ],
    name="io.debezium.connector.postgresql.Source",
)

HEARTBEAT_KEY_SCHEMA = Schema.struct(
    [("serverName", STRING_SCHEMA)], name="io.debezium.connector.common.ServerNameKey"
)
HEARTBEAT_VALUE_SCHEMA = Schema.struct(
    [("ts_ms", INT64_SCHEMA)], name="io.debezium.connector.common.Heartbeat"
)


def envelope_schema(topic: str, value_schema: Schema) -> Schema:
    """The envelope of one table's events (`topic` is `<prefix>.<schema>.<table>`)."""
    return Schema.struct(
        [
            ("before", value_schema),
            ("after", value_schema),
            ("source", SOURCE_SCHEMA),
            ("op", STRING_SCHEMA),
            ("ts_ms", OPTIONAL_INT64_SCHEMA),
        ],
        name=f"{topic}.Envelope",
        version=1,
    )


def zero_value(schema: Schema) -> Any:
    """Debezium's stand-in for a required column a key-only row image lacks: the value
    its converters fall back to for a missing required value — zero, the epoch, an
    empty string, `1970-01-01T00:00:00Z` for a ZonedTimestamp, a zero of the column's
    scale for a Decimal."""
    if schema.optional:
        return None
    name = schema.name
    if name is not None:
        if name == Decimal.LOGICAL_NAME:
            return decimal.Decimal(0).scaleb(-Decimal.scale(schema))
        if name == DBZ_VARIABLE_SCALE_DECIMAL:
            return Struct.trusted(schema, [0, b"\x00"])
        if name in _ZERO_BY_NAME:
            return _ZERO_BY_NAME[name]
    return _ZERO_BY_TYPE.get(schema.type, 0)


_ZERO_BY_NAME: dict[str, Any] = {
    Date.LOGICAL_NAME: dt.date(1970, 1, 1),
    Time.LOGICAL_NAME: dt.time(0),
    Timestamp.LOGICAL_NAME: dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
    DBZ_ZONED_TIMESTAMP: "1970-01-01T00:00:00Z",
    DBZ_ZONED_TIME: "00:00:00Z",
    DBZ_INTERVAL: "P0Y0M0DT0H0M0S",
}
_ZERO_BY_TYPE: dict[Type, Any] = {
    Type.BOOLEAN: False,
    Type.STRING: "",
    Type.BYTES: b"",
    Type.FLOAT32: 0.0,
    Type.FLOAT64: 0.0,
}
