"""MySqlCdcSource's configuration: Debezium's MySQL / MariaDB connector keys.

`CONFIG` declares every key once; `parse_config(props)` checks them together and
`connection_params(cfg)` turns them into PyMySQL's `connect()` keywords (the binlog
reader takes the same). `database.*` keys or a `connection.url` (`jdbc:mysql://…`,
`jdbc:mariadb://…`, `mysql://…`, through `connectors.jdbc.urls` like the JDBC
connectors') reach the server; the `database.*` keys win over the URL's parts.

Keys of Debezium's that only tune its Java machinery (`schema.history.internal.*`
besides the topic, `database.ssl.*` defaults, `snapshot.fetch.size` as a JDBC hint, …)
are accepted by the runtime's config without effect, as Kafka Connect passes unknown
keys through; the ones that change what is captured or how are declared here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    Password,
    at_least,
    one_of,
)
from connectors.cdc_config import operations as _operations
from connectors.cdc_config import regexes as _regexes
from connectors.cdc_config import topic_prefix as _topic_prefix
from connectors.jdbc.urls import has_placeholder, mask_url, translate
from connectors.mysql.columns import (
    BIGINT_UNSIGNED_MODES,
    DECIMAL_HANDLING_MODES,
    TIME_PRECISION_MODES,
    TypeOptions,
)
from connectors.mysql.signals import split_name

__all__ = ["CONFIG", "SNAPSHOT_MODES", "connection_params", "parse_config", "type_options"]

SNAPSHOT_MODES = ("initial", "no_data", "schema_only", "when_needed", "never", "initial_only")
LOCKING_MODES = ("minimal", "extended", "none")
WATERMARKING_STRATEGIES = ("insert_insert", "insert_delete")
#: Debezium's signal channels; only `source` (the signal table) is read here
SIGNAL_CHANNELS = ("source", "kafka", "jmx", "file", "in-process")
_DB = "Database"
_CDC = "Change capture"
_TYPES = "Column types"
_SIGNALS = "Signals and incremental snapshots"


def _signal_table(name: str, value: Any) -> None:
    if value is None:
        return
    try:
        split_name(str(value))
    except ValueError:
        raise ConfigError(name, value, "the signal table as db.table") from None


def _channels(name: str, value: Any) -> None:
    for channel in value or []:
        if channel not in SIGNAL_CHANNELS:
            raise ConfigError(
                name, value, f"{channel!r} is not one of {', '.join(SIGNAL_CHANNELS)}"
            )
        if channel != "source":
            raise ConfigError(
                name,
                value,
                f"the {channel} channel is not supported: signals come through the signal "
                "table (source) only",
            )


def _mysql_url(url: str, key: str = "connection.url") -> Any:
    db = translate(url, key=key)
    if db.backend not in ("mysql", "mariadb"):
        raise ConfigError(
            key, mask_url(url), "not a MySQL or MariaDB URL (jdbc:mysql://…, mysql://…)"
        )
    return db


def _connection_url(name: str, value: Any) -> None:
    if value is not None and not has_placeholder(str(value)):
        _mysql_url(str(value), name)


CONFIG = ConfigDef()
for _key, _type, _default, _validator, _imp, _doc, _group in [
    (
        "topic.prefix",
        ConfigType.STRING,
        None,
        _topic_prefix,
        Importance.HIGH,
        "Logical name of the server: the prefix of every topic (<prefix>.<db>.<table>) and "
        "the source partition (Debezium 1.x's database.server.name is taken when unset)",
        _CDC,
    ),
    (
        "database.server.name",
        ConfigType.STRING,
        None,
        _topic_prefix,
        Importance.LOW,
        "Debezium 1.x's name of topic.prefix",
        _CDC,
    ),
    (
        "database.hostname",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Host of the MySQL / MariaDB server (or give connection.url)",
        _DB,
    ),
    ("database.port", ConfigType.INT, 3306, at_least(1), Importance.HIGH, "Port", _DB),
    ("database.user", ConfigType.STRING, None, None, Importance.HIGH, "User", _DB),
    ("database.password", ConfigType.PASSWORD, None, None, Importance.HIGH, "Password", _DB),
    (
        "connection.url",
        ConfigType.STRING,
        None,
        _connection_url,
        Importance.HIGH,
        "A database URL instead of the database.* keys (jdbc:mysql://host:3306/?user=u, "
        "jdbc:mariadb://…, mysql://user:secret@host:3306); database.* keys override its parts",
        _DB,
    ),
    (
        "database.server.id",
        ConfigType.LONG,
        5400,
        at_least(1),
        Importance.HIGH,
        "The replica id the binlog reader registers with (unique among the server's "
        "replicas and readers: another reader with the same id is disconnected)",
        _DB,
    ),
    (
        "database.include.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against database names: capture only these",
        _CDC,
    ),
    (
        "database.exclude.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against database names: capture all but these",
        _CDC,
    ),
    (
        "table.include.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against db.table: capture only these",
        _CDC,
    ),
    (
        "table.exclude.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions matched against db.table: capture all but these",
        _CDC,
    ),
    (
        "column.include.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions over db.table.column: the values carry only these",
        _CDC,
    ),
    (
        "column.exclude.list",
        ConfigType.LIST,
        "",
        _regexes,
        Importance.MEDIUM,
        "Regular expressions over db.table.column: the values carry all but these",
        _CDC,
    ),
    (
        "snapshot.mode",
        ConfigType.STRING,
        "initial",
        one_of(*SNAPSHOT_MODES),
        Importance.MEDIUM,
        "initial: snapshot when the offsets hold no completed one, then stream; no_data "
        "(schema_only): stream from the current position; when_needed: also snapshot when "
        "the stored position is no longer on the server; never: stream from the offsets or, "
        "without them, from the oldest binlog the server has (as Debezium's never); "
        "initial_only: snapshot and stop",
        _CDC,
    ),
    (
        "snapshot.locking.mode",
        ConfigType.STRING,
        "minimal",
        one_of(*LOCKING_MODES),
        Importance.MEDIUM,
        "minimal: FLUSH TABLES WITH READ LOCK only while the binlog position is read and the "
        "consistent-snapshot transaction starts; extended: hold it for the whole snapshot; "
        "none: no lock (MariaDB's binlog_snapshot_file/position give the transaction's "
        "position)",
        _CDC,
    ),
    (
        "snapshot.fetch.size",
        ConfigType.INT,
        10240,
        at_least(1),
        Importance.LOW,
        "Rows read ahead of the log during the snapshot (bounds its memory)",
        _CDC,
    ),
    (
        "include.schema.changes",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Emit DDL statements as schema change events on the topic <topic.prefix>",
        _CDC,
    ),
    (
        "schema.history.internal.kafka.topic",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Debezium's schema history topic: when set, every DDL statement is also written to "
        "it (the rows are decoded from the binlog's own table metadata, so it is a record, "
        "not needed to restart)",
        _CDC,
    ),
    (
        "database.history.kafka.topic",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Debezium 1.x's name of schema.history.internal.kafka.topic",
        _CDC,
    ),
    (
        "schema.history.internal.kafka.bootstrap.servers",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Debezium's brokers of the history topic: accepted, without effect (the history "
        "records go through the worker's log like every record of the task)",
        _CDC,
    ),
    (
        "database.history.kafka.bootstrap.servers",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Debezium 1.x's name of schema.history.internal.kafka.bootstrap.servers",
        _CDC,
    ),
    (
        "schema.history.internal",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Debezium's history implementation class: accepted, without effect",
        _CDC,
    ),
    (
        "skipped.operations",
        ConfigType.LIST,
        "t",
        _operations,
        Importance.LOW,
        "Operations not emitted: c, u, d, t (truncate), or none",
        _CDC,
    ),
    (
        "tombstones.on.delete",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.MEDIUM,
        "Follow each delete with a tombstone (same key, null value) for log compaction",
        _CDC,
    ),
    (
        "heartbeat.interval.ms",
        ConfigType.INT,
        0,
        at_least(0),
        Importance.MEDIUM,
        "Emit a heartbeat to __debezium-heartbeat.<prefix> this often while nothing is "
        "captured (0: never), so the offsets follow the binlog",
        _CDC,
    ),
    (
        "max.batch.size",
        ConfigType.INT,
        2048,
        at_least(1),
        Importance.LOW,
        "Most records one poll() returns",
        _CDC,
    ),
    (
        "poll.interval.ms",
        ConfigType.INT,
        500,
        at_least(1),
        Importance.LOW,
        "Longest time poll() waits for changes",
        _CDC,
    ),
    (
        "signal.data.collection",
        ConfigType.STRING,
        None,
        _signal_table,
        Importance.MEDIUM,
        "The signal table (db.table; columns id, type, data): execute-snapshot / "
        "stop-snapshot / pause-snapshot / resume-snapshot / log rows inserted there are "
        "acted on as the binlog reaches them, and incremental snapshots write their "
        "watermarks there (the connector's user needs INSERT on it)",
        _SIGNALS,
    ),
    (
        "signal.enabled.channels",
        ConfigType.LIST,
        "source",
        _channels,
        Importance.LOW,
        "Where signals come from: source (the signal table) is the one supported",
        _SIGNALS,
    ),
    (
        "incremental.snapshot.chunk.size",
        ConfigType.INT,
        1024,
        at_least(1),
        Importance.MEDIUM,
        "Rows an incremental snapshot reads at a time (one watermark window each)",
        _SIGNALS,
    ),
    (
        "incremental.snapshot.watermarking.strategy",
        ConfigType.STRING,
        "insert_insert",
        one_of(*WATERMARKING_STRATEGIES),
        Importance.LOW,
        "insert_insert: a row opens and another closes each chunk's window in the signal "
        "table; insert_delete: the open row is deleted to close it (the table stays small; "
        "the user needs DELETE on it too)",
        _SIGNALS,
    ),
    (
        "read.only",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.LOW,
        "Debezium's incremental snapshots without writes to the signal table (GTID "
        "watermarks): not supported, false only",
        _SIGNALS,
    ),
    (
        "time.precision.mode",
        ConfigType.STRING,
        "adaptive_time_microseconds",
        one_of(*TIME_PRECISION_MODES),
        Importance.MEDIUM,
        "adaptive_time_microseconds: DATE as days, TIME as µs, DATETIME as ms or µs by its "
        "precision (io.debezium.time types); adaptive: TIME(0-3) as ms too; connect: Kafka "
        "Connect's Date, Time, Timestamp (ms). TIMESTAMP is ISO-8601 UTC text in every mode",
        _TYPES,
    ),
    (
        "decimal.handling.mode",
        ConfigType.STRING,
        "precise",
        one_of(*DECIMAL_HANDLING_MODES),
        Importance.MEDIUM,
        "precise: DECIMAL as Connect's Decimal; double: float64; string: its text",
        _TYPES,
    ),
    (
        "bigint.unsigned.handling.mode",
        ConfigType.STRING,
        "long",
        one_of(*BIGINT_UNSIGNED_MODES),
        Importance.MEDIUM,
        "long: BIGINT UNSIGNED as int64 (values above 2^63-1 wrap negative, as in "
        "Debezium); precise: Decimal with scale 0",
        _TYPES,
    ),
]:
    CONFIG.define(_key, _type, _default, _validator, _imp, _doc, group=_group)


def parse_config(props: Mapping[str, Any]) -> dict[str, Any]:
    cfg = CONFIG.parse(props)
    if cfg["topic.prefix"] and cfg["database.server.name"]:
        raise ConfigError(
            "topic.prefix", cfg["topic.prefix"], "set it or database.server.name, not both"
        )
    cfg["topic.prefix"] = cfg["topic.prefix"] or cfg["database.server.name"]
    if not cfg["topic.prefix"]:
        raise ConfigError("topic.prefix", None, "the prefix of every topic: give topic.prefix")
    for kind in ("database", "table", "column"):
        if cfg[f"{kind}.include.list"] and cfg[f"{kind}.exclude.list"]:
            raise ConfigError(
                f"{kind}.exclude.list",
                ",".join(cfg[f"{kind}.exclude.list"]),
                f"{kind}.include.list is set too: give one of the two",
            )
    if not cfg["database.hostname"] and not cfg["connection.url"]:
        raise ConfigError("database.hostname", None, "give database.hostname or connection.url")
    if cfg["connection.url"]:
        connection_params(cfg)
    if not cfg["schema.history.internal.kafka.topic"]:  # Debezium 1.x's name of it
        cfg["schema.history.internal.kafka.topic"] = cfg["database.history.kafka.topic"]
    if cfg["read.only"]:
        raise ConfigError(
            "read.only",
            "true",
            "not supported: incremental snapshots write their watermarks to the signal "
            "table (give the user INSERT on signal.data.collection)",
        )
    if cfg["snapshot.mode"] == "schema_only":
        cfg["snapshot.mode"] = "no_data"
    return cfg


def type_options(cfg: Mapping[str, Any]) -> TypeOptions:
    return TypeOptions(
        cfg["time.precision.mode"],
        cfg["decimal.handling.mode"],
        cfg["bigint.unsigned.handling.mode"],
    )


def connection_params(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """PyMySQL connect() keywords: the URL's parts, overridden by database.* keys."""
    params: dict[str, Any] = {}
    url = cfg.get("connection.url")
    if url:
        parsed = _mysql_url(url).url
        params.update(
            host=parsed.host, port=parsed.port, user=parsed.username, password=parsed.password
        )
    password = cfg.get("database.password")
    overrides = {
        "host": cfg.get("database.hostname"),
        "port": cfg.get("database.port") if cfg.get("database.hostname") else None,
        "user": cfg.get("database.user"),
        "password": password.value if isinstance(password, Password) else password,
    }
    params.update({k: v for k, v in overrides.items() if v})
    params = {k: v for k, v in params.items() if v is not None}
    params.setdefault("port", 3306)
    params.setdefault("password", "")
    params["connect_timeout"] = 10
    params["charset"] = "utf8mb4"
    return params


def describe_connection(params: Mapping[str, Any]) -> str:
    """user@host:port for messages (never the password)."""
    return f"{params.get('user', '')}@{params.get('host', '')}:{params.get('port', '')}"
