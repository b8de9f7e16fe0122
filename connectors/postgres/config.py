"""PostgresCdcSource's configuration: Debezium's PostgreSQL connector keys.

`CONFIG` declares every key once; `parse_config(props)` checks them together (one of
`database.hostname` or `connection.url`, regexes that compile) and `connection_params`
turns the parsed config into psycopg2 connection keywords. Every session — the
snapshot's and the walsender's, whose pgoutput text values use its own settings — runs
with TimeZone UTC, DateStyle ISO and IntervalStyle postgres, so values have one text
form wherever they come from, whatever the server's defaults.

`time.precision.mode`, `decimal.handling.mode` and `interval.handling.mode` are
Debezium's keys for how column types map (`connectors.postgres.columns.TypeOptions`).

Debezium 1.x's names still run, because its tutorials and the configs users copied from
them (debezium-examples' tutorial/register-postgres.json) use them: `database.server.name`
is `topic.prefix`; `schema.whitelist` / `schema.blacklist` are `schema.include.list` /
`schema.exclude.list`; `table.whitelist` / `table.blacklist` are `table.include.list` /
`table.exclude.list`. `parse_config` folds the schema lists into the table lists (one
`table.include.list` regex over `schema.table`), so the task filters on one pair.

`column.include.list` / `column.exclude.list` (1.x: `column.whitelist` /
`column.blacklist`) choose the columns of the events' values by regular expressions
over `schema.table.column`, matched whole and ignoring case as Debezium matches them
(`connectors.postgres.tables.ColumnFilter`); giving both is refused, as Debezium
refuses it. A primary-key column stays in the key either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    Password,
    at_least,
    non_empty_string,
    one_of,
)
from connectors.cdc_config import operations as _operations
from connectors.cdc_config import regexes as _regexes
from connectors.cdc_config import topic_prefix as _topic_prefix
from connectors.jdbc.urls import DatabaseUrl, has_placeholder, libpq_params, mask_url, translate
from connectors.postgres.columns import (
    DECIMAL_HANDLING_MODES,
    INTERVAL_HANDLING_MODES,
    TIME_PRECISION_MODES,
    TypeOptions,
)

__all__ = [
    "AUTOCREATE_MODES",
    "CONFIG",
    "SNAPSHOT_MODES",
    "connection_params",
    "describe_connection",
    "parse_config",
    "type_options",
]

SNAPSHOT_MODES = ("initial", "never", "no_data", "initial_only", "always")
AUTOCREATE_MODES = ("all_tables", "filtered", "disabled")
LOGICAL_DECODING_PLUGINS = ("pgoutput", "decoderbufs", "wal2json")
_SESSION_OPTIONS = (
    "-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=3"
)
_TYPES = "Column types"
_DB = "Database"
_CDC = "Change capture"


def _identifier(name: str, value: Any) -> None:
    if value is not None and not re.fullmatch(r"[a-z0-9_]{1,63}", str(value)):
        raise ConfigError(name, value, "use 1 to 63 lower-case letters, digits and underscores")


def _postgres_url(url: str, key: str = "connection.url") -> DatabaseUrl:
    """`url` translated (`connectors.jdbc.urls`); ConfigError unless it is PostgreSQL's."""
    db = translate(url, key=key)
    if db.backend != "postgresql":
        raise ConfigError(
            key,
            mask_url(url),
            "not a PostgreSQL URL (jdbc:postgresql://…, postgresql://… or postgresql+psycopg2://…)",
        )
    return db


def _connection_url(name: str, value: Any) -> None:
    # a ${provider:…} placeholder is resolved, and the URL checked, when the task starts
    if value is not None and not has_placeholder(str(value)):
        _postgres_url(str(value), name)


CONFIG = (
    ConfigDef()
    .define(
        "topic.prefix",
        ConfigType.STRING,
        None,
        _topic_prefix,
        Importance.HIGH,
        "Logical name of the server: the prefix of every topic (<prefix>.<schema>.<table>) "
        "and the source partition (required; Debezium 1.x's database.server.name is taken "
        "when this is not set)",
        group=_CDC,
    )
    .define(
        "database.server.name",
        ConfigType.STRING,
        None,
        _topic_prefix,
        Importance.LOW,
        "Debezium 1.x's name of topic.prefix",
        group=_CDC,
    )
    .define(
        "database.hostname",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Host of the PostgreSQL server (or give connection.url)",
        group=_DB,
    )
    .define("database.port", ConfigType.INT, 5432, at_least(1), Importance.HIGH, "Port", group=_DB)
    .define("database.user", ConfigType.STRING, None, None, Importance.HIGH, "User", group=_DB)
    .define(
        "database.password", ConfigType.PASSWORD, None, None, Importance.HIGH, "Password", group=_DB
    )
    .define(
        "database.dbname", ConfigType.STRING, None, None, Importance.HIGH, "Database", group=_DB
    )
    .define(
        "connection.url",
        ConfigType.STRING,
        None,
        _connection_url,
        Importance.HIGH,
        "A database URL instead of the database.* keys: a JDBC URL "
        "(jdbc:postgresql://host:5432/db?user=u&password=p) or a SQLAlchemy URL "
        "(postgresql://user:secret@host:5432/db); database.* keys override its parts",
        group=_DB,
    )
    .define(
        "slot.name",
        ConfigType.STRING,
        "debezium",
        _identifier,
        Importance.MEDIUM,
        "The logical replication slot (created when missing; one per connector)",
        group=_CDC,
    )
    .define(
        "plugin.name",
        ConfigType.STRING,
        "pgoutput",
        one_of(*LOGICAL_DECODING_PLUGINS),
        Importance.MEDIUM,
        "Debezium's logical decoding plugin. Changes are always read with pgoutput (built "
        "into PostgreSQL 10 and later, nothing to install); decoderbufs and wal2json, which "
        "Debezium 1.x configs name, are accepted and read the same way, with the same events",
        group=_CDC,
    )
    .define(
        "publication.name",
        ConfigType.STRING,
        "dbz_publication",
        non_empty_string,
        Importance.MEDIUM,
        "The publication pgoutput streams",
        group=_CDC,
    )
    .define(
        "publication.autocreate.mode",
        ConfigType.STRING,
        "all_tables",
        one_of(*AUTOCREATE_MODES),
        Importance.MEDIUM,
        "all_tables: create the publication FOR ALL TABLES when missing (superuser); "
        "filtered: create or set it to the tables the include/exclude lists select; "
        "disabled: it must exist",
        group=_CDC,
    )
    .define(
        "table.include.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against schema.table: capture only these",
        group=_CDC,
    )
    .define(
        "table.exclude.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against schema.table: capture all but these",
        group=_CDC,
    )
    .define(
        "schema.include.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against schema names: capture only tables in these "
        "(together with the table lists: a table must pass both)",
        group=_CDC,
    )
    .define(
        "schema.exclude.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against schema names: capture no table in these",
        group=_CDC,
    )
    .define(
        "schema.whitelist",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.LOW,
        "Debezium 1.x's name of schema.include.list",
        group=_CDC,
    )
    .define(
        "schema.blacklist",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.LOW,
        "Debezium 1.x's name of schema.exclude.list",
        group=_CDC,
    )
    .define(
        "table.whitelist",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.LOW,
        "Debezium 1.x's name of table.include.list",
        group=_CDC,
    )
    .define(
        "table.blacklist",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.LOW,
        "Debezium 1.x's name of table.exclude.list",
        group=_CDC,
    )
    .define(
        "column.include.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against schema.table.column: the events' values "
        "carry only these columns (the key keeps the primary key)",
        group=_CDC,
    )
    .define(
        "column.exclude.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against schema.table.column: the events' values "
        "carry all columns but these (the key keeps the primary key)",
        group=_CDC,
    )
    .define(
        "column.whitelist",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.LOW,
        "Debezium 1.x's name of column.include.list",
        group=_CDC,
    )
    .define(
        "column.blacklist",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.LOW,
        "Debezium 1.x's name of column.exclude.list",
        group=_CDC,
    )
    .define(
        "snapshot.mode",
        ConfigType.STRING,
        "initial",
        one_of(*SNAPSHOT_MODES),
        Importance.MEDIUM,
        "initial: snapshot when there is no completed snapshot in the offsets, then stream; "
        "always: snapshot at every start; initial_only: snapshot and stop; "
        "never (no_data): stream only",
        group=_CDC,
    )
    .define(
        "skipped.operations",
        ConfigType.LIST,
        "t",
        _operations,
        Importance.LOW,
        "Operations not emitted: c, u, d, t (truncate), or none",
        group=_CDC,
    )
    .define(
        "tombstones.on.delete",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Follow each delete with a tombstone (same key, null value) for log compaction",
        group=_CDC,
    )
    .define(
        "heartbeat.interval.ms",
        ConfigType.INT,
        0,
        at_least(0),
        Importance.MEDIUM,
        "Emit a heartbeat to __debezium-heartbeat.<prefix> this often (0: never), so the "
        "slot advances while the captured tables are quiet",
        group=_CDC,
    )
    .define(
        "max.batch.size",
        ConfigType.INT,
        2048,
        at_least(1),
        Importance.LOW,
        "Most records one poll() returns",
        group=_CDC,
    )
    .define(
        "poll.interval.ms",
        ConfigType.INT,
        500,
        at_least(1),
        Importance.LOW,
        "Longest time poll() waits for changes",
        group=_CDC,
    )
    .define(
        "snapshot.fetch.size",
        ConfigType.INT,
        10240,
        at_least(1),
        Importance.LOW,
        "Rows read ahead of the log during the snapshot (bounds its memory)",
        group=_CDC,
    )
    .define(
        "time.precision.mode",
        ConfigType.STRING,
        "adaptive",
        one_of(*TIME_PRECISION_MODES),
        Importance.MEDIUM,
        "adaptive: date, time and timestamp columns as Debezium's io.debezium.time types "
        "with the column's precision (ms for up to 3 fraction digits, else µs); "
        "adaptive_time_microseconds: every time column in µs (MicroTime); connect: "
        "Kafka Connect's Date, Time and Timestamp (ms: finer digits are lost). "
        "timestamptz is an ISO-8601 UTC string (ZonedTimestamp) in every mode",
        group=_TYPES,
    )
    .define(
        "decimal.handling.mode",
        ConfigType.STRING,
        "precise",
        one_of(*DECIMAL_HANDLING_MODES),
        Importance.MEDIUM,
        "precise: numeric(p, s) as Connect's Decimal, numeric without a scale as "
        "io.debezium.data.VariableScaleDecimal (exact); double: float64 (may round); "
        "string: the number's text (the only mode that carries NaN and Infinity)",
        group=_TYPES,
    )
    .define(
        "interval.handling.mode",
        ConfigType.STRING,
        "numeric",
        one_of(*INTERVAL_HANDLING_MODES),
        Importance.LOW,
        "numeric: interval columns as µs (io.debezium.time.MicroDuration, a month "
        "counted as 30.4375 days); string: ISO-8601 text P<y>Y<m>M<d>DT<h>H<m>M<s>S "
        "(io.debezium.time.Interval, exact)",
        group=_TYPES,
    )
)


# Each current key and its Debezium 1.x name.
_FORMER_NAMES = {
    "topic.prefix": "database.server.name",
    "schema.include.list": "schema.whitelist",
    "schema.exclude.list": "schema.blacklist",
    "table.include.list": "table.whitelist",
    "table.exclude.list": "table.blacklist",
    "column.include.list": "column.whitelist",
    "column.exclude.list": "column.blacklist",
}


def _either(cfg: Mapping[str, Any], key: str) -> Any:
    """`key`'s value, else its Debezium 1.x name's; both set is a ConfigError."""
    former = _FORMER_NAMES[key]
    if cfg[key] and cfg[former]:
        raise ConfigError(key, cfg[key], f"set {key} or its former name {former}, not both")
    return cfg[key] or cfg[former]


def _table_filter(cfg: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(table.include.list, table.exclude.list) over `schema.table` meaning what the
    schema and table lists (and their 1.x names) mean together: a table is captured
    when its schema passes the schema lists and its name the table lists. Without a
    schema list the table lists are as given; with one, a single include regex:
    lookaheads for the schema lists and the table exclusions, then the table inclusions
    (or any table)."""
    tables_in, tables_out = _either(cfg, "table.include.list"), _either(cfg, "table.exclude.list")
    schemas_in, schemas_out = (
        _either(cfg, "schema.include.list"),
        _either(cfg, "schema.exclude.list"),
    )
    if not schemas_in and not schemas_out:
        return list(tables_in), list(tables_out)
    guards = []
    if schemas_in:
        guards.append(f"(?=(?:{'|'.join(schemas_in)})\\.)")
    if schemas_out:
        guards.append(f"(?!(?:{'|'.join(schemas_out)})\\.)")
    if tables_out and not tables_in:
        guards.append(f"(?!(?:{'|'.join(tables_out)})\\Z)")
    body = f"(?:{'|'.join(tables_in)})" if tables_in else "[^.]+\\.[^.]+"
    return ["".join(guards) + body], []


def parse_config(props: Mapping[str, Any]) -> dict[str, Any]:
    cfg = CONFIG.parse(props)
    cfg["topic.prefix"] = _either(cfg, "topic.prefix")
    if not cfg["topic.prefix"]:
        raise ConfigError(
            "topic.prefix",
            None,
            "the prefix of every topic: give topic.prefix (or Debezium 1.x's database.server.name)",
        )
    cfg["table.include.list"], cfg["table.exclude.list"] = _table_filter(cfg)
    cfg["column.include.list"] = _either(cfg, "column.include.list")
    cfg["column.exclude.list"] = _either(cfg, "column.exclude.list")
    if cfg["column.include.list"] and cfg["column.exclude.list"]:
        raise ConfigError(
            "column.exclude.list",
            ",".join(cfg["column.exclude.list"]),
            "column.include.list is set too: give one of the two (a column is kept when "
            "the include list matches it, or when the exclude list does not)",
        )
    if not cfg["database.hostname"] and not cfg["connection.url"]:
        raise ConfigError(
            "database.hostname",
            None,
            "give database.hostname (and database.dbname) or a connection.url",
        )
    if cfg["connection.url"]:
        connection_params(cfg)  # a bad URL fails here
    elif not cfg["database.dbname"]:
        raise ConfigError("database.dbname", None, "the database to capture")
    if cfg["snapshot.mode"] == "no_data":
        cfg["snapshot.mode"] = "never"
    return cfg


def type_options(cfg: Mapping[str, Any]) -> TypeOptions:
    """How column types map under a parsed config (pass it to `read_table` and
    `Table.build`)."""
    return TypeOptions.from_config(cfg)


def connection_params(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """psycopg2.connect keywords: the URL's parts, overridden by database.* keys.

    `connection.url` goes through `connectors.jdbc.urls` like the JDBC connectors' (a
    jdbc:postgresql: URL, or a SQLAlchemy URL naming any PostgreSQL driver): only its
    libpq keywords are used, because the walsender is reached through psycopg2's
    replication connection whatever driver the URL names."""
    params: dict[str, Any] = {}
    url = cfg.get("connection.url")
    if url:
        params.update(libpq_params(_postgres_url(url)))
    password = cfg.get("database.password")
    overrides = {
        "host": cfg.get("database.hostname"),
        "port": cfg.get("database.port") if cfg.get("database.hostname") else None,
        "user": cfg.get("database.user"),
        "password": password.value if isinstance(password, Password) else password,
        "dbname": cfg.get("database.dbname"),
    }
    params.update({k: v for k, v in overrides.items() if v})
    params = {k: v for k, v in params.items() if v is not None}
    params.setdefault("port", 5432)
    # the URL's options (currentSchema's search_path) after the session's own
    params["options"] = " ".join(o for o in (_SESSION_OPTIONS, params.get("options")) if o)
    params.setdefault("connect_timeout", 10)
    return params


def describe_connection(params: Mapping[str, Any]) -> str:
    """user@host:port/db for messages (never the password)."""
    return (
        f"{params.get('user', '')}@{params.get('host', '')}:{params.get('port', '')}"
        f"/{params.get('dbname', '')}"
    )
