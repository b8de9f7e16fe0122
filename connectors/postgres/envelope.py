"""Debezium's change-event envelope, heartbeat and key schemas, and their builders.

Value of a change event (`<prefix>.<schema>.<table>.Envelope`, version 2), the fields
and their order as Debezium 3.x's PostgreSQL connector writes them:

    before       optional <…>.Value   row before (updates/deletes; see REPLICA IDENTITY)
    after        optional <…>.Value   row after (creates, updates, snapshot reads)
    source       io.debezium.connector.postgresql.Source (version 1)
                 version, connector ("postgresql"), name (topic.prefix), ts_ms (commit
                 time), snapshot (an io.debezium.data.Enum: "first", "true",
                 "first_in_data_collection", "last_in_data_collection", "last" in a
                 snapshot, "false" after it), db, sequence (JSON text
                 `["<last commit LSN>", "<this LSN>"]`), ts_us, ts_ns (the commit time
                 finer), schema, table, txId, lsn, xmin, origin, origin_lsn (null: no
                 replication origins are read)
    transaction  optional event.block {id, total_order, data_collection_order}: null,
                 as Debezium's without `provide.transaction.metadata`
    op           c | u | d | r | t
    ts_ms, ts_us, ts_ns   when the connector made the event

Consumers read fields by name, so the fields Debezium 2 and 3 added cost nothing to
those written for 1.x, and a consumer written for 3.x finds every field it expects
(compared field by field with Debezium's own events by
tests/conformance/test_differential_debezium.py).

Key: the primary-key struct (`<…>.Key`), or null for tables without one and for
truncates. Heartbeats (`__debezium-heartbeat.<prefix>`): key
`io.debezium.connector.common.ServerNameKey {serverName}`, value
`io.debezium.connector.common.Heartbeat {ts_ms}`, both version 1.
"""

from __future__ import annotations

import datetime as dt
import decimal
import time
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
    DBZ_ENUM,
    DBZ_INTERVAL,
    DBZ_VARIABLE_SCALE_DECIMAL,
    DBZ_ZONED_TIME,
    DBZ_ZONED_TIMESTAMP,
    debezium_schema,
)

__all__ = [
    "CONNECTOR",
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "PLACEHOLDER",
    "SNAPSHOT_INDEX",
    "SNAPSHOT_MARKERS",
    "SOURCE_SCHEMA",
    "TRANSACTION_SCHEMA",
    "VERSION",
    "change_event",
    "envelope_schema",
    "source_block",
    "zero_value",
]

VERSION = "0.1.0"
CONNECTOR = "postgresql"
# Debezium's value for an unchanged TOASTed column the row image does not carry
PLACEHOLDER = "__debezium_unavailable_value"

#: `source.snapshot`'s values, in the order of Debezium's Enum `allowed` parameter
SNAPSHOT_MARKERS = (
    "true",
    "first",
    "first_in_data_collection",
    "last_in_data_collection",
    "last",
    "false",
    "incremental",
)

SOURCE_SCHEMA = Schema.struct(
    [
        ("version", STRING_SCHEMA),
        ("connector", STRING_SCHEMA),
        ("name", STRING_SCHEMA),
        ("ts_ms", INT64_SCHEMA),
        (
            "snapshot",
            debezium_schema(
                DBZ_ENUM, optional=True, parameters={"allowed": ",".join(SNAPSHOT_MARKERS)}
            ).with_(default="false"),
        ),
        ("db", STRING_SCHEMA),
        ("sequence", OPTIONAL_STRING_SCHEMA),
        ("ts_us", OPTIONAL_INT64_SCHEMA),
        ("ts_ns", OPTIONAL_INT64_SCHEMA),
        ("schema", STRING_SCHEMA),
        ("table", STRING_SCHEMA),
        ("txId", OPTIONAL_INT64_SCHEMA),
        ("lsn", OPTIONAL_INT64_SCHEMA),
        ("xmin", OPTIONAL_INT64_SCHEMA),
        ("origin", OPTIONAL_STRING_SCHEMA),
        ("origin_lsn", OPTIONAL_INT64_SCHEMA),
    ],
    name="io.debezium.connector.postgresql.Source",
    version=1,
)
#: Index of `snapshot` in SOURCE_SCHEMA (a snapshot's first and last records are re-marked).
SNAPSHOT_INDEX = 4

TRANSACTION_SCHEMA = Schema.struct(
    [
        ("id", STRING_SCHEMA),
        ("total_order", INT64_SCHEMA),
        ("data_collection_order", INT64_SCHEMA),
    ],
    name="event.block",
    version=1,
    optional=True,
)

HEARTBEAT_KEY_SCHEMA = Schema.struct(
    [("serverName", STRING_SCHEMA)], name="io.debezium.connector.common.ServerNameKey", version=1
)
HEARTBEAT_VALUE_SCHEMA = Schema.struct(
    [("ts_ms", INT64_SCHEMA)], name="io.debezium.connector.common.Heartbeat", version=1
)


def envelope_schema(
    topic: str, value_schema: Schema, source_schema: Schema = SOURCE_SCHEMA
) -> Schema:
    """The envelope of one table's events (`topic` is `<prefix>.<schema>.<table>`);
    `source_schema` is another connector's `source` block (the MySQL source's)."""
    return Schema.struct(
        [
            ("before", value_schema),
            ("after", value_schema),
            ("source", source_schema),
            ("transaction", TRANSACTION_SCHEMA),
            ("op", STRING_SCHEMA),
            ("ts_ms", OPTIONAL_INT64_SCHEMA),
            ("ts_us", OPTIONAL_INT64_SCHEMA),
            ("ts_ns", OPTIONAL_INT64_SCHEMA),
        ],
        name=f"{topic}.Envelope",
        version=2,
    )


def source_block(
    *,
    prefix: str,
    ts_us: int,
    snapshot: str,
    db: str,
    sequence: str | None,
    schema: str,
    table: str,
    tx_id: int | None,
    lsn: int | None,
) -> Struct:
    """The `source` block of an event: `ts_us` is the commit's (the snapshot's start for
    its reads), whose ms and ns forms it also fills."""
    return Struct.trusted(
        SOURCE_SCHEMA,
        [
            VERSION,
            CONNECTOR,
            prefix,
            ts_us // 1000,
            snapshot,
            db,
            sequence,
            ts_us,
            ts_us * 1000,
            schema,
            table,
            tx_id,
            lsn,
            None,
            None,
            None,
        ],
    )


def change_event(envelope: Schema, before: Any, after: Any, source: Struct, op: str) -> Struct:
    """One event's value of `envelope` (`envelope_schema`), stamped now."""
    ns = time.time_ns()
    return Struct.trusted(
        envelope, [before, after, source, None, op, ns // 1_000_000, ns // 1000, ns]
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
