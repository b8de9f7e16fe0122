"""The JDBC sink's configuration: Confluent's JdbcSinkConnector keys, declared once.

`CONFIG` declares every key; `SinkSettings.parse(props)` applies it and then the rules
that tie keys together (an upsert needs a primary key, deletes need `pk.mode=record_key`,
`pk.mode=kafka` names three columns or none, …), raising `ConfigError` naming the key.
`validate(props)` reports the same problems per key for the REST validate endpoint.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConfigValue,
    Importance,
    Password,
    at_least,
    one_of,
)
from connectors.jdbc.urls import validate_url

__all__ = ["CONFIG", "KAFKA_PK_COLUMNS", "SinkSettings", "validate"]

CONNECTION_URL = "connection.url"
CONNECTION_USER = "connection.user"
CONNECTION_PASSWORD = "connection.password"
INSERT_MODE = "insert.mode"
PK_MODE = "pk.mode"
PK_FIELDS = "pk.fields"
FIELDS_WHITELIST = "fields.whitelist"
FIELDS_INCLUDE_LIST = "fields.include.list"
AUTO_CREATE = "auto.create"
AUTO_EVOLVE = "auto.evolve"
DELETE_ENABLED = "delete.enabled"
TRUNCATE_ENABLED = "truncate.enabled"
BATCH_SIZE = "batch.size"
TABLE_NAME_FORMAT = "table.name.format"
DB_TIMEZONE = "db.timezone"
MAX_RETRIES = "max.retries"
RETRY_BACKOFF_MS = "retry.backoff.ms"
QUOTE_SQL_IDENTIFIERS = "quote.sql.identifiers"
REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"

#: The primary-key columns of `pk.mode=kafka` when `pk.fields` names none.
KAFKA_PK_COLUMNS = ("__connect_topic", "__connect_partition", "__connect_offset")

# A table name format: `${topic}` placeholders and identifier characters; one literal
# dot at most, separating a schema from the table. Dots inside a topic name are part
# of the table name (they never split it: a topic "a.b" writes to the table "a.b").
_FORMAT_PART = re.compile(r"^(?:[A-Za-z0-9_$-]|\$\{topic\})+$")


def _table_name_format(name: str, value: Any) -> None:
    if value is None:
        return
    parts = str(value).split(".")
    if len(parts) > 2 or not all(_FORMAT_PART.match(p) for p in parts):
        raise ConfigError(
            name,
            value,
            "expected [schema.]table built from letters, digits, _ - $ and ${topic}",
        )


def _time_zone(name: str, value: Any) -> None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(name, value, "not a known time zone") from None


CONFIG = (
    ConfigDef()
    .define(
        CONNECTION_URL,
        ConfigType.STRING,
        validator=validate_url,
        importance=Importance.HIGH,
        documentation="The database: a JDBC URL as Confluent's connector takes it (e.g. "
        "jdbc:postgresql://host:5432/db?currentSchema=s, jdbc:mysql://host:3306/db, "
        "jdbc:sqlite:test.db) or a SQLAlchemy URL (e.g. postgresql://host/db)",
        group="Connection",
    )
    .define(
        CONNECTION_USER,
        ConfigType.STRING,
        None,
        importance=Importance.HIGH,
        documentation="Database user (overrides the URL's).",
        group="Connection",
    )
    .define(
        CONNECTION_PASSWORD,
        ConfigType.PASSWORD,
        None,
        importance=Importance.HIGH,
        documentation="Database password (overrides the URL's).",
        group="Connection",
    )
    .define(
        INSERT_MODE,
        ConfigType.STRING,
        "insert",
        one_of("insert", "upsert", "update"),
        Importance.HIGH,
        "insert: plain INSERT; upsert: insert or update by primary key (idempotent, so "
        "redelivery after a crash is harmless); update: UPDATE by primary key.",
        group="Writes",
    )
    .define(
        BATCH_SIZE,
        ConfigType.INT,
        3000,
        at_least(1),
        Importance.MEDIUM,
        "Records written per statement batch and per transaction.",
        group="Writes",
    )
    .define(
        DELETE_ENABLED,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.MEDIUM,
        documentation="Delete the row of a tombstone's key (a null value). Requires "
        "pk.mode=record_key.",
        group="Writes",
    )
    .define(
        TRUNCATE_ENABLED,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.MEDIUM,
        documentation="Empty the table of a truncate event (a Debezium change event with "
        "op=t, which ExtractNewRecordState passes on with truncate.handling.mode=keep): "
        "all its rows are deleted in the put's transaction, in order with the other "
        "records. Off, a truncate event is a record the sink cannot write.",
        group="Writes",
    )
    .define(
        TABLE_NAME_FORMAT,
        ConfigType.STRING,
        "${topic}",
        _table_name_format,
        Importance.MEDIUM,
        "Destination table, with ${topic} for the record's topic; 'schema.${topic}' "
        "writes into a schema.",
        group="Data Mapping",
    )
    .define(
        PK_MODE,
        ConfigType.STRING,
        "none",
        one_of("none", "kafka", "record_key", "record_value"),
        Importance.HIGH,
        "Where the primary key comes from: none; kafka (topic, partition, offset); "
        "record_key (the key, primitive or struct); record_value (value fields).",
        group="Data Mapping",
    )
    .define(
        PK_FIELDS,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Primary-key column names: for kafka three names (default "
        "__connect_topic,__connect_partition,__connect_offset); for record_key the key "
        "struct's fields (default all) or the one column of a primitive key; for "
        "record_value the value's fields (default all).",
        group="Data Mapping",
    )
    .define(
        FIELDS_WHITELIST,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Value fields to write besides the key columns (default all).",
        group="Data Mapping",
    )
    .define(
        FIELDS_INCLUDE_LIST,
        ConfigType.LIST,
        "",
        importance=Importance.LOW,
        documentation="The newer name of fields.whitelist.",
        group="Data Mapping",
    )
    .define(
        DB_TIMEZONE,
        ConfigType.STRING,
        "UTC",
        _time_zone,
        Importance.MEDIUM,
        "Time zone in which Timestamp values are written to columns without a time zone.",
        group="Data Mapping",
    )
    .define(
        AUTO_CREATE,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.MEDIUM,
        documentation="CREATE TABLE from the record's schema when the table is missing.",
        group="DDL Support",
    )
    .define(
        AUTO_EVOLVE,
        ConfigType.BOOLEAN,
        False,
        importance=Importance.MEDIUM,
        documentation="ALTER TABLE ADD the record's missing fields as nullable columns "
        "(never drops, retypes or changes the key).",
        group="DDL Support",
    )
    .define(
        QUOTE_SQL_IDENTIFIERS,
        ConfigType.STRING,
        "always",
        one_of("always", "never"),
        Importance.MEDIUM,
        "always: quote every table and column name; never: write them bare.",
        group="DDL Support",
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.LOW,
        documentation="Write a field's schema default for a null value.",
        group="Data Mapping",
    )
    .define(
        MAX_RETRIES,
        ConfigType.INT,
        10,
        at_least(0),
        Importance.MEDIUM,
        "Retries of a batch after a transient database error before the task fails.",
        group="Retries",
    )
    .define(
        RETRY_BACKOFF_MS,
        ConfigType.INT,
        3000,
        at_least(0),
        Importance.MEDIUM,
        "Wait before a retry, in milliseconds.",
        group="Retries",
    )
)


@dataclass(frozen=True, slots=True)
class SinkSettings:
    """The parsed, cross-checked configuration of a JDBC sink task."""

    url: str
    user: str | None
    password: str | None
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields_include: frozenset[str] | None
    auto_create: bool
    auto_evolve: bool
    delete_enabled: bool
    truncate_enabled: bool
    batch_size: int
    table_name_format: str
    db_timezone: zoneinfo.ZoneInfo
    max_retries: int
    retry_backoff_ms: int
    quote_identifiers: bool
    replace_null_with_default: bool

    @staticmethod
    def parse(props: Mapping[str, Any]) -> SinkSettings:
        values = CONFIG.parse(props)
        _check_together(values)
        password = values[CONNECTION_PASSWORD]
        include = values[FIELDS_INCLUDE_LIST] or values[FIELDS_WHITELIST]
        return SinkSettings(
            url=values[CONNECTION_URL],
            user=values[CONNECTION_USER] or None,
            password=password.value if isinstance(password, Password) else None,
            insert_mode=values[INSERT_MODE].lower(),
            pk_mode=values[PK_MODE].lower(),
            pk_fields=tuple(values[PK_FIELDS]),
            fields_include=frozenset(include) if include else None,
            auto_create=values[AUTO_CREATE],
            auto_evolve=values[AUTO_EVOLVE],
            delete_enabled=values[DELETE_ENABLED],
            truncate_enabled=values[TRUNCATE_ENABLED],
            batch_size=values[BATCH_SIZE],
            table_name_format=values[TABLE_NAME_FORMAT],
            db_timezone=zoneinfo.ZoneInfo(values[DB_TIMEZONE]),
            max_retries=values[MAX_RETRIES],
            retry_backoff_ms=values[RETRY_BACKOFF_MS],
            quote_identifiers=values[QUOTE_SQL_IDENTIFIERS].lower() == "always",
            replace_null_with_default=values[REPLACE_NULL_WITH_DEFAULT],
        )


def _check_together(values: Mapping[str, Any]) -> None:
    """The rules between keys; raises ConfigError naming the key to change."""
    insert_mode = str(values[INSERT_MODE]).lower()
    pk_mode = str(values[PK_MODE]).lower()
    pk_fields = values[PK_FIELDS] or []
    if insert_mode in ("upsert", "update") and pk_mode == "none":
        raise ConfigError(
            INSERT_MODE, insert_mode, f"{insert_mode} needs a primary key: set pk.mode"
        )
    if values[DELETE_ENABLED] and pk_mode != "record_key":
        raise ConfigError(DELETE_ENABLED, "true", f"deletes need pk.mode=record_key, not {pk_mode}")
    if pk_mode == "none" and pk_fields:
        raise ConfigError(PK_FIELDS, ",".join(pk_fields), "pk.mode=none takes no pk.fields")
    if pk_mode == "kafka" and pk_fields and len(pk_fields) != 3:
        raise ConfigError(
            PK_FIELDS,
            ",".join(pk_fields),
            "pk.mode=kafka needs three names (topic, partition, offset columns) or none",
        )
    if len(set(pk_fields)) != len(pk_fields):
        raise ConfigError(PK_FIELDS, ",".join(pk_fields), "a name is given twice")
    whitelist, include = values[FIELDS_WHITELIST] or [], values[FIELDS_INCLUDE_LIST] or []
    if whitelist and include and set(whitelist) != set(include):
        raise ConfigError(
            FIELDS_INCLUDE_LIST,
            ",".join(include),
            "differs from fields.whitelist (it is the newer name of the same setting)",
        )


def validate(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Per-key results for the REST validate endpoint, cross-key rules included."""
    results = CONFIG.validate(props)
    if any(r.errors for r in results):
        return results
    try:
        _check_together(CONFIG.parse(props))
    except ConfigError as exc:
        for result in results:
            if result.name == exc.name:
                result.errors.append(str(exc))
    return results
