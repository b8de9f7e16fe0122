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

from connect.api import (
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
)

__all__ = [
    "CONNECTOR",
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "SOURCE_SCHEMA",
    "VERSION",
    "envelope_schema",
]

VERSION = "0.1.0"
CONNECTOR = "postgresql"

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
