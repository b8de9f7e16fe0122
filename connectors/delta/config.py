"""DeltaSink's configuration: where the tables are, how rows reach them, and when.

Names follow the Apache Iceberg sink's (`iceberg.tables`, `…id-columns`,
`…evolve-schema-enabled`) and kafka-delta-ingest's options (checkpoints every N
commits, an app id for the `txn` actions) under a `delta.` prefix. `delta.storage.*`
keys go to delta-rs as its storage options with the prefix cut (for `s3://`:
`delta.storage.AWS_ENDPOINT_URL`, `…AWS_ACCESS_KEY_ID`, `…AWS_SECRET_ACCESS_KEY`,
`…AWS_REGION`, `…AWS_ALLOW_HTTP`, and `…conditional_put=etag` or
`…AWS_S3_ALLOW_UNSAFE_RENAME` for commits on S3).

`parse(props)` returns `DeltaSettings` or raises one ConfigError whose message has a
line per mistake, so a user fixes a config in one round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConfigValue,
    Importance,
    at_least,
    non_empty_string,
    one_of,
)

__all__ = ["CONFIG", "STORAGE_PREFIX", "DeltaSettings", "parse", "validate"]

TABLE_URI = "delta.table.uri"
PARTITION_BY = "delta.partition.by"
WRITE_MODE = "delta.write.mode"
ID_COLUMNS = "delta.id.columns"
CDC_FIELD = "delta.cdc.field"
EVOLVE = "delta.schema.evolution.enabled"
FLUSH_SIZE = "delta.flush.size"
COMMIT_INTERVAL = "delta.commit.interval.ms"
COMMIT_RETRIES = "delta.commit.retries"
CHECKPOINT_INTERVAL = "delta.checkpoint.interval"
VACUUM_INTERVAL = "delta.vacuum.interval.ms"
VACUUM_RETENTION = "delta.vacuum.retention.hours"
APP_ID = "delta.app.id"
STORAGE_PREFIX = "delta.storage."
TOPIC_PLACEHOLDER = "${topic}"

_TABLE = "Table"
_WRITE = "Write"
_MAINTAIN = "Maintenance"

CONFIG = (
    ConfigDef()
    .define(
        TABLE_URI, ConfigType.STRING, validator=non_empty_string, importance=Importance.HIGH,
        documentation="Where the table is: a directory, file:// or s3:// URI. `${topic}` in "
        "it is replaced by the record's topic, for a table per topic; without it every "
        "topic writes the one table. A missing table is created from the first rows.",
        group=_TABLE,
    )
    .define(
        PARTITION_BY, ConfigType.LIST, "", importance=Importance.MEDIUM,
        documentation="Columns that partition a table the sink creates (Hive-style "
        "directories); an existing table keeps its own partitioning.",
        group=_TABLE,
    )
    .define(
        WRITE_MODE, ConfigType.STRING, "append", one_of("append", "merge"), Importance.HIGH,
        "append: every record is a new row. merge: records are changes (a Debezium "
        "envelope, or ExtractNewRecordState's rows with the delta.cdc.field and "
        "__deleted fields) applied by delta.id.columns, so the table equals the source "
        "table: one MERGE per commit, the last change of a key in it winning.",
        group=_WRITE,
    )
    .define(
        ID_COLUMNS, ConfigType.LIST, "", importance=Importance.HIGH,
        documentation="The columns that identify a row (merge mode; required there).",
        group=_WRITE,
    )
    .define(
        CDC_FIELD, ConfigType.STRING, "__op", non_empty_string, Importance.MEDIUM,
        "Merge mode, flattened records: the field holding the operation (c, r, u or d; "
        "d deletes). A `__deleted` field of \"true\" deletes too. Neither is written to "
        "the table. A Debezium envelope (before/after/op) needs no setting.",
        group=_WRITE,
    )
    .define(
        EVOLVE, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
        documentation="Add new columns to the table (nullable) as records bring them. "
        "Off: a record with a column the table lacks fails the task, naming it. "
        "Either way a column whose type cannot become the table's fails the task.",
        group=_WRITE,
    )
    .define(
        FLUSH_SIZE, ConfigType.INT, 100_000, at_least(1), Importance.MEDIUM,
        "Commit a table once this many rows wait for it.",
        group=_WRITE,
    )
    .define(
        COMMIT_INTERVAL, ConfigType.LONG, 10_000, at_least(0), Importance.MEDIUM,
        "Commit the rows waiting for a table at least this often (ms): the latency "
        "bound, kafka-delta-ingest's allowed_latency. 0: only by delta.flush.size.",
        group=_WRITE,
    )
    .define(
        COMMIT_RETRIES, ConfigType.INT, 10, at_least(0), Importance.LOW,
        "How often a commit that conflicts with another writer's (a concurrent merge, "
        "another task's offsets) is tried again against the new table version before "
        "its rows are dropped and read again from the log.",
        group=_WRITE,
    )
    .define(
        APP_ID, ConfigType.STRING, "", importance=Importance.LOW,
        documentation="The prefix of the Delta `txn` application ids this sink commits "
        "its offsets under (`<app id>-<topic>-<partition>`); empty: the connector's name. "
        "Two connectors writing one table need different ones.",
        group=_WRITE,
    )
    .define(
        CHECKPOINT_INTERVAL, ConfigType.INT, 0, at_least(0), Importance.LOW,
        "Write a checkpoint when a commit's table version is a multiple of this (as "
        "kafka-delta-ingest's --checkpoints, every 10th); 0: delta-rs's own, by the "
        "table's delta.checkpointInterval (100).",
        group=_MAINTAIN,
    )
    .define(
        VACUUM_INTERVAL, ConfigType.LONG, 0, at_least(0), Importance.LOW,
        "Vacuum each table this task writes this often (ms): delete files no version "
        "within delta.vacuum.retention.hours needs. 0: never.",
        group=_MAINTAIN,
    )
    .define(
        VACUUM_RETENTION, ConfigType.INT, 168, at_least(0), Importance.LOW,
        "Files removed from the table longer ago than this (hours) are vacuumed.",
        group=_MAINTAIN,
    )
)


@dataclass(frozen=True, slots=True)
class DeltaSettings:
    table_uri: str
    partition_by: tuple[str, ...]
    mode: str
    id_columns: tuple[str, ...]
    cdc_field: str
    evolve: bool
    flush_size: int
    commit_interval_ms: int
    commit_retries: int
    app_id: str
    checkpoint_interval: int
    vacuum_interval_ms: int
    vacuum_retention_hours: int
    storage_options: dict[str, str]

    def uri_for(self, topic: str) -> str:
        return self.table_uri.replace(TOPIC_PLACEHOLDER, topic)


def _between_keys(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, reason) for the mistakes no single key shows; `props` parse cleanly."""
    out = []
    p = CONFIG.parse(props)
    if p[WRITE_MODE].lower() == "merge" and not p[ID_COLUMNS]:
        out.append((ID_COLUMNS, f"required with {WRITE_MODE}=merge: the columns that "
                                "identify a row"))
    if p[WRITE_MODE].lower() == "append" and p[ID_COLUMNS]:
        out.append((ID_COLUMNS, f"used only with {WRITE_MODE}=merge"))
    if STORAGE_PREFIX in props:
        out.append((STORAGE_PREFIX, "a storage option needs a name after the prefix"))
    return out


def validate(props: Mapping[str, Any]) -> list[ConfigValue]:
    """A result per key, the between-keys mistakes on the key they name (for the REST
    validate endpoint)."""
    values = CONFIG.validate(props)
    if any(v.errors for v in values):
        return values
    by_name = {v.name: v for v in values}
    for key, reason in _between_keys(props):
        target = by_name.get(key) or ConfigValue(key, props.get(key))
        if key not in by_name:
            values.append(target)
        target.errors.append(f"{key}: {reason}")
    return values


def parse(props: Mapping[str, Any]) -> DeltaSettings:
    mistakes = [e for value in validate(props) for e in value.errors]
    if mistakes:
        raise ConfigError("\n".join(mistakes))
    p = CONFIG.parse(props)
    return DeltaSettings(
        table_uri=p[TABLE_URI],
        partition_by=tuple(p[PARTITION_BY]),
        mode=p[WRITE_MODE].lower(),
        id_columns=tuple(p[ID_COLUMNS]),
        cdc_field=p[CDC_FIELD],
        evolve=p[EVOLVE],
        flush_size=p[FLUSH_SIZE],
        commit_interval_ms=p[COMMIT_INTERVAL],
        commit_retries=p[COMMIT_RETRIES],
        app_id=p[APP_ID] or str(props.get("name") or "delta"),
        checkpoint_interval=p[CHECKPOINT_INTERVAL],
        vacuum_interval_ms=p[VACUUM_INTERVAL],
        vacuum_retention_hours=p[VACUUM_RETENTION],
        storage_options={
            k[len(STORAGE_PREFIX):]: str(v) for k, v in props.items()
            if k.startswith(STORAGE_PREFIX) and len(k) > len(STORAGE_PREFIX)
        },
    )
