"""The JDBC source's configuration: Confluent's JdbcSourceConnector keys, declared once.

`CONFIG` declares every key (the task's `TASK_CONFIG` adds its share of the tables);
`parse_config(props)` applies it and then the rules that tie keys together (a timestamp
mode needs its column, a query excludes table lists, a whitelist excludes a blacklist,
…), raising `ConfigError` naming the key. `validate(props)` reports the same problems
per key for the REST validate endpoint. Its own module, as the sink's `sink_config`,
because the declarations are most of the connector's text and none of its behaviour.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from typing import Any

from connect.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigError,
    ConfigType,
    ConfigValue,
    Importance,
    at_least,
    one_of,
)
from connectors.jdbc.types import NUMERIC_MAPPINGS
from connectors.jdbc.urls import validate_url

__all__ = ["CONFIG", "MODES", "TABLES_CONFIG", "TASK_CONFIG", "parse_config", "validate"]

MODES = ("bulk", "incrementing", "timestamp", "timestamp+incrementing")
TABLES_CONFIG = "tables"  # the task's share, as JSON [[schema, table], ...]
_DATABASE = "Database"
_MODE = "Mode"
_CONNECTOR = "Connector"


def _zone(name: str, value: Any) -> None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(name, value, "not a known time zone") from None


def _entries(name: str, value: Any) -> None:
    for entry in value or []:
        if not entry or "\x00" in entry:
            raise ConfigError(name, value, "table names may not be empty")


CONFIG = (
    ConfigDef()
    .define(
        "connection.url",
        ConfigType.STRING,
        NO_DEFAULT,
        validate_url,
        Importance.HIGH,
        "The database: a JDBC URL as Confluent's connector takes it (e.g. "
        "jdbc:postgresql://host:5432/db?currentSchema=s, jdbc:mysql://host:3306/db, "
        "jdbc:sqlite:test.db) or a SQLAlchemy URL (e.g. sqlite:///data/shop.db, "
        "postgresql://user@host:5432/db)",
        group=_DATABASE,
    )
    .define(
        "connection.user",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Database user (overrides the URL's)",
        group=_DATABASE,
    )
    .define(
        "connection.password",
        ConfigType.PASSWORD,
        None,
        None,
        Importance.HIGH,
        "Database password (overrides the URL's)",
        group=_DATABASE,
    )
    .define(
        "table.whitelist",
        ConfigType.LIST,
        "",
        _entries,
        Importance.MEDIUM,
        "Tables to copy (table, schema.table or database.schema.table); empty: all",
        group=_DATABASE,
    )
    .define(
        "table.include.list",
        ConfigType.LIST,
        "",
        _entries,
        Importance.MEDIUM,
        "The newer name of table.whitelist",
        group=_DATABASE,
    )
    .define(
        "table.blacklist",
        ConfigType.LIST,
        "",
        _entries,
        Importance.MEDIUM,
        "Tables not to copy; may not be combined with a whitelist",
        group=_DATABASE,
    )
    .define(
        "table.exclude.list",
        ConfigType.LIST,
        "",
        _entries,
        Importance.MEDIUM,
        "The newer name of table.blacklist",
        group=_DATABASE,
    )
    .define(
        "table.types",
        ConfigType.LIST,
        "TABLE",
        None,
        Importance.LOW,
        "Kinds of tables to copy: TABLE, VIEW",
        group=_DATABASE,
    )
    .define(
        "schema.pattern",
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "The schema to list tables from (default: every user schema)",
        group=_DATABASE,
    )
    .define(
        "db.timezone",
        ConfigType.STRING,
        "UTC",
        _zone,
        Importance.MEDIUM,
        "Time zone of timestamp columns without one (an IANA name)",
        group=_DATABASE,
    )
    .define(
        "numeric.mapping",
        ConfigType.STRING,
        None,
        one_of(*NUMERIC_MAPPINGS),
        Importance.LOW,
        "How NUMERIC columns map: none (Decimal), precision_only, best_fit, best_fit_eager_double",
        group=_DATABASE,
    )
    .define(
        "numeric.precision.mapping",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Deprecated: true means numeric.mapping=precision_only",
        group=_DATABASE,
    )
    .define(
        "mode",
        ConfigType.STRING,
        NO_DEFAULT,
        one_of(*MODES),
        Importance.HIGH,
        "How tables are polled: bulk, incrementing, timestamp, timestamp+incrementing",
        group=_MODE,
    )
    .define(
        "incrementing.column.name",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "Strictly increasing column (empty: the table's autoincrement column)",
        group=_MODE,
    )
    .define(
        "timestamp.column.name",
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "Timestamp column(s) of the last change; several are combined with COALESCE",
        group=_MODE,
    )
    .define(
        "timestamp.initial",
        ConfigType.LONG,
        None,
        None,
        Importance.LOW,
        "Epoch ms to start from when no offset is stored (-1: now); default: all rows",
        group=_MODE,
    )
    .define(
        "validate.non.null",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Refuse nullable incrementing/timestamp columns (rows with NULL are never read)",
        group=_MODE,
    )
    .define(
        "query",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "A custom SELECT instead of tables (one task; topic = topic.prefix)",
        group=_MODE,
    )
    .define(
        "query.suffix",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "Text appended to every generated query",
        group=_MODE,
    )
    .define(
        "topic.prefix",
        ConfigType.STRING,
        NO_DEFAULT,
        None,
        Importance.HIGH,
        "Prefix of the table's name in its topic (the whole topic name for a query)",
        group=_CONNECTOR,
    )
    .define(
        "poll.interval.ms",
        ConfigType.INT,
        5000,
        at_least(1),
        Importance.HIGH,
        "How often each table is polled for new data, in ms",
        group=_CONNECTOR,
    )
    .define(
        "batch.max.rows",
        ConfigType.INT,
        100,
        at_least(1),
        Importance.LOW,
        "Rows in one poll's batch, at most",
        group=_CONNECTOR,
    )
    .define(
        "table.poll.interval.ms",
        ConfigType.LONG,
        60_000,
        at_least(1),
        Importance.LOW,
        "How often the connector looks for new or dropped tables, in ms",
        group=_CONNECTOR,
    )
    .define(
        "timestamp.delay.interval.ms",
        ConfigType.LONG,
        0,
        at_least(0),
        Importance.HIGH,
        "Rows are read only once their timestamp is this old (ms), so transactions that "
        "take less time have committed by then",
        group=_CONNECTOR,
    )
)

TASK_CONFIG = CONFIG.merged(
    ConfigDef().define(
        TABLES_CONFIG, ConfigType.STRING, "[]", None, Importance.HIGH, "", internal=True
    )
)


def _cross_errors(cfg: Mapping[str, Any]) -> dict[str, str]:
    """Errors that involve several keys, by the key to blame."""
    errors: dict[str, str] = {}
    mode = cfg["mode"]
    if cfg["table.whitelist"] and cfg["table.include.list"]:
        errors["table.include.list"] = "set table.include.list or table.whitelist, not both"
    if cfg["table.blacklist"] and cfg["table.exclude.list"]:
        errors["table.exclude.list"] = "set table.exclude.list or table.blacklist, not both"
    include = cfg["table.whitelist"] or cfg["table.include.list"]
    exclude = cfg["table.blacklist"] or cfg["table.exclude.list"]
    if include and exclude:
        errors["table.blacklist"] = "a table whitelist and a blacklist may not both be set"
    if mode in ("timestamp", "timestamp+incrementing") and not cfg["timestamp.column.name"]:
        errors["timestamp.column.name"] = f"mode {mode} needs at least one timestamp column"
    incrementing = mode in ("incrementing", "timestamp+incrementing")
    if incrementing and cfg["query"] and not cfg["incrementing.column.name"]:
        errors["incrementing.column.name"] = (
            f"mode {mode} with a query needs the incrementing column named"
        )
    if cfg["query"] and (include or exclude):
        errors["query"] = "a query and table lists may not both be set"
    return errors


def parse_config(props: Mapping[str, Any], definition: ConfigDef = CONFIG) -> dict[str, Any]:
    """Typed config; ConfigError for the first bad key, including cross-key checks."""
    cfg = definition.parse(props)
    for name, reason in _cross_errors(cfg).items():
        raise ConfigError(name, props.get(name, ""), reason)
    if cfg["numeric.mapping"] is None:
        cfg["numeric.mapping"] = "precision_only" if cfg["numeric.precision.mapping"] else "none"
    return cfg


def validate(props: Mapping[str, Any]) -> list[ConfigValue]:
    """Per-key results for the REST validate endpoint, cross-key rules included."""
    results = CONFIG.validate(props)
    if any(r.errors for r in results):
        return results
    errors = _cross_errors(CONFIG.parse(props))
    for result in results:
        if result.name in errors:
            result.errors.append(errors[result.name])
    return results
