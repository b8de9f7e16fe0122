"""Debezium's MySQL / MariaDB `source` block and schema change events.

The envelope itself (before, after, source, transaction, op, ts_ms/us/ns), the
heartbeat's key and value and `source.snapshot`'s markers are the PostgreSQL source's
(`connectors.postgres.envelope`): Debezium's connectors share them. What differs is the
`source` block (`io.debezium.connector.mysql.Source`, or `…mariadb.Source` for the
MariaDB connector's class), version 1, fields in Debezium 3.x's order:

    version, connector ("mysql" | "mariadb"), name (topic.prefix), ts_ms (event time:
    the binlog event's, the snapshot's start for reads), snapshot, db, sequence (null),
    ts_us, ts_ns, table, server_id, gtid (the transaction's, null without GTIDs),
    file, pos (the binlog position of the transaction's start), row (the row's index
    in its rows event), thread (null: not in row events), query (null: include.query
    is not read)

Schema change events (`include.schema.changes`, on the topic `<topic.prefix>`): key
`io.debezium.connector.mysql.SchemaChangeKey {databaseName}`, value
`io.debezium.connector.mysql.SchemaChangeValue {source, ts_ms, databaseName,
schemaName, ddl, tableChanges}`; `tableChanges` is left empty (Debezium fills it with
the table's structure as its DDL parser saw it; ours decodes rows from the binlog's own
table metadata and parses no DDL).
"""

from __future__ import annotations

from typing import Any

from connect.api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SourceRecord,
    Struct,
)
from connectors.jdbc.types import DBZ_ENUM, debezium_schema
from connectors.postgres.envelope import SNAPSHOT_MARKERS

__all__ = [
    "SCHEMA_CHANGE_KEY",
    "SNAPSHOT_INDEX",
    "VERSION",
    "ddl_records",
    "schema_change_value",
    "schema_change_value_schema",
    "source_block",
    "source_schema",
]

VERSION = "0.1.0"
#: Index of `snapshot` in the source schema (a snapshot's first and last are re-marked).
SNAPSHOT_INDEX = 4


def source_schema(connector: str) -> Schema:
    """The `source` block of the `mysql` or `mariadb` connector."""
    return Schema.struct(
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
            ("table", OPTIONAL_STRING_SCHEMA),
            ("server_id", INT64_SCHEMA),
            ("gtid", OPTIONAL_STRING_SCHEMA),
            ("file", STRING_SCHEMA),
            ("pos", INT64_SCHEMA),
            ("row", INT32_SCHEMA),
            ("thread", OPTIONAL_INT64_SCHEMA),
            ("query", OPTIONAL_STRING_SCHEMA),
        ],
        name=f"io.debezium.connector.{connector}.Source",
        version=1,
    )


def source_block(
    schema: Schema,
    *,
    connector: str,
    prefix: str,
    ts_ms: int,
    snapshot: str,
    db: str,
    table: str | None,
    server_id: int,
    gtid: str | None,
    file: str,
    pos: int,
    row: int,
) -> Struct:
    return Struct.trusted(
        schema,
        [
            VERSION,
            connector,
            prefix,
            ts_ms,
            snapshot,
            db,
            None,
            ts_ms * 1000,
            ts_ms * 1_000_000,
            table,
            server_id,
            gtid,
            file,
            pos,
            row,
            None,
            None,
        ],
    )


SCHEMA_CHANGE_KEY = Schema.struct(
    [("databaseName", STRING_SCHEMA)],
    name="io.debezium.connector.mysql.SchemaChangeKey",
    version=1,
)


def schema_change_value_schema(source: Schema) -> Schema:
    return Schema.struct(
        [
            ("source", source),
            ("ts_ms", INT64_SCHEMA),
            ("databaseName", OPTIONAL_STRING_SCHEMA),
            ("schemaName", OPTIONAL_STRING_SCHEMA),
            ("ddl", OPTIONAL_STRING_SCHEMA),
            ("tableChanges", Schema.array(STRING_SCHEMA)),
        ],
        name="io.debezium.connector.mysql.SchemaChangeValue",
        version=1,
    )


def schema_change_value(schema: Schema, source: Struct, db: str, ddl: str, ts_ms: int) -> Any:
    return Struct.trusted(schema, [source, ts_ms, db, None, ddl, []])


def ddl_records(
    source: Struct,
    db: str,
    ddl: str,
    offset: dict[str, Any],
    *,
    prefix: str,
    partition: dict[str, Any],
    change_schema: Schema | None,
    history_topic: str | None,
    ts_ms: int,
) -> list[SourceRecord]:
    """A DDL statement's records: the schema change event on `<prefix>` (when
    `change_schema` is given: include.schema.changes) and the history topic's record
    (Debezium's history document: source, position, databaseName, ddl, tableChanges)."""
    out = []
    if change_schema is not None:
        key = Struct.trusted(SCHEMA_CHANGE_KEY, [db])
        value = schema_change_value(change_schema, source, db, ddl, ts_ms)
        out.append(
            SourceRecord.of(prefix, SCHEMA_CHANGE_KEY, key, change_schema, value, partition, offset)
        )
    if history_topic:
        document = {
            "source": {"server": prefix},
            "position": dict(offset),
            "ts_ms": ts_ms,
            "databaseName": db,
            "ddl": ddl,
            "tableChanges": [],
        }
        out.append(SourceRecord.of(history_topic, None, None, None, document, partition, offset))
    return out
