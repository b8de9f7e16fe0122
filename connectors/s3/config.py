"""The S3 connectors' configuration, parsed into typed settings.

The module is split by concern, and every public name stays importable from here:

- `config_defs`: the key names, the alias tables and the `ConfigDef` declarations
  (`STORE`, `LAYOUT`, `SINK_CONFIG`, `SOURCE_CONFIG`);
- `config_validators`: the checks of single values those declarations name;
- this module: the typed settings (`StoreSettings`, `LayoutSettings`,
  `SinkSettings`, `SourceSettings`) and the rules that tie keys together.

`SinkSettings.parse` / `SourceSettings.parse` apply a ConfigDef and then the rules
between keys (a FieldPartitioner needs `partition.field.name`, scheduled rotation
needs `timezone`, …), raising `ConfigError` naming the key. `validate_*` report the
same problems per key for the REST validate endpoint.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect.api import ConfigDef, ConfigError, ConfigValue, Password
from connectors.s3.config_defs import (
    ACCESS_KEY_ID,
    AVRO_CODEC,
    BATCH_MAX_SIZE,
    BYTEARRAY_EXTENSION,
    BYTEARRAY_SEPARATOR,
    COMPRESSION_LEVEL,
    COMPRESSION_TYPE,
    CONDITIONAL_WRITES,
    CONNECT_TIMEOUT_MS,
    CSV_HEADER,
    DIRECTORY_DELIM,
    EXTRACTORS,
    FILE_DELIM,
    FLUSH_SIZE,
    FORMAT_CLASS,
    FORMATS,
    HEADERS_FORMAT_CLASS,
    JSON_DECIMAL_FORMAT,
    KEYS_FORMAT_CLASS,
    LAYOUT,
    LOCALE,
    MAX_OPEN_FILES,
    MODE,
    NULL_VALUES,
    PARQUET_CODEC,
    PART_RETRIES,
    PART_SIZE,
    PARTITION_DURATION_MS,
    PARTITION_FIELD_NAME,
    PARTITIONER_CLASS,
    PARTITIONERS,
    PATH_FORMAT,
    PATH_STYLE,
    POLL_INTERVAL_MS,
    READ_TIMEOUT_MS,
    RETRY_BACKOFF_MS,
    ROTATE_INTERVAL_MS,
    ROTATE_SCHEDULE_INTERVAL_MS,
    S3_BUCKET,
    S3_REGION,
    SCHEMA_COMPATIBILITY,
    SECRET_ACCESS_KEY,
    SINK_CONFIG,
    SINK_FORMATS,
    SOURCE_CONFIG,
    STORE,
    STORE_KAFKA_HEADERS,
    STORE_KAFKA_KEYS,
    STORE_URL,
    TASK_COUNT,
    TASK_ID,
    TIMESTAMP_EXTRACTOR,
    TIMESTAMP_FIELD,
    TIMEZONE,
    TOPIC_REGEX_LIST,
    TOPICS_DIR,
    ZERO_PAD,
)
from connectors.s3.config_defs import (  # re-exported: every key stays importable here
    CREDENTIALS_PROVIDER as CREDENTIALS_PROVIDER,
)
from connectors.s3.config_defs import STORAGE_CLASS as STORAGE_CLASS
from connectors.s3.config_defs import MiB as MiB

__all__ = [
    "LAYOUT",
    "SINK_CONFIG",
    "SOURCE_CONFIG",
    "STORE",
    "TASK_COUNT",
    "TASK_ID",
    "LayoutSettings",
    "SinkSettings",
    "SourceSettings",
    "StoreSettings",
    "validate_sink",
    "validate_source",
]


@dataclass(frozen=True, slots=True)
class StoreSettings:
    bucket: str
    region: str
    url: str | None
    access_key_id: str
    secret_access_key: Password
    path_style: bool
    part_size: int
    part_retries: int
    retry_backoff_ms: int
    connect_timeout_ms: int
    read_timeout_ms: int

    @staticmethod
    def of(c: Mapping[str, Any]) -> StoreSettings:
        return StoreSettings(
            bucket=c[S3_BUCKET],
            region=c[S3_REGION],
            url=c[STORE_URL] or None,
            access_key_id=c[ACCESS_KEY_ID] or "",
            secret_access_key=c[SECRET_ACCESS_KEY] or Password(""),
            path_style=c[PATH_STYLE],
            part_size=c[PART_SIZE],
            part_retries=c[PART_RETRIES],
            retry_backoff_ms=c[RETRY_BACKOFF_MS],
            connect_timeout_ms=c[CONNECT_TIMEOUT_MS],
            read_timeout_ms=c[READ_TIMEOUT_MS],
        )


@dataclass(frozen=True, slots=True)
class LayoutSettings:
    topics_dir: str
    directory_delim: str
    file_delim: str
    zero_pad: int
    format: str
    compression: str
    compression_level: int
    avro_codec: str
    parquet_codec: str
    bytearray_extension: str
    bytearray_separator: bytes
    json_decimal_numeric: bool
    partitioner: str
    partition_fields: tuple[str, ...]
    path_format: str
    partition_duration_ms: int
    locale: str
    timezone: str
    timestamp_extractor: str
    timestamp_field: str
    store_keys: bool
    keys_format: str
    store_headers: bool
    headers_format: str

    @staticmethod
    def of(c: Mapping[str, Any]) -> LayoutSettings:
        separator = c[BYTEARRAY_SEPARATOR]
        return LayoutSettings(
            topics_dir=c[TOPICS_DIR].strip("/"),
            directory_delim=c[DIRECTORY_DELIM],
            file_delim=c[FILE_DELIM],
            zero_pad=c[ZERO_PAD],
            format=FORMATS[c[FORMAT_CLASS].strip()],
            compression=c[COMPRESSION_TYPE].lower(),
            compression_level=c[COMPRESSION_LEVEL],
            avro_codec=c[AVRO_CODEC].lower(),
            parquet_codec=c[PARQUET_CODEC].lower(),
            bytearray_extension=c[BYTEARRAY_EXTENSION],
            bytearray_separator=(
                b"\n"
                if separator is None
                else separator.encode().decode("unicode_escape").encode("latin-1")
            ),
            json_decimal_numeric=c[JSON_DECIMAL_FORMAT].upper() == "NUMERIC",
            partitioner=PARTITIONERS[c[PARTITIONER_CLASS].strip()],
            partition_fields=tuple(c[PARTITION_FIELD_NAME]),
            path_format=c[PATH_FORMAT],
            partition_duration_ms=c[PARTITION_DURATION_MS],
            locale=c[LOCALE],
            timezone=c[TIMEZONE],
            timestamp_extractor=EXTRACTORS[c[TIMESTAMP_EXTRACTOR].strip()],
            timestamp_field=c[TIMESTAMP_FIELD],
            store_keys=c[STORE_KAFKA_KEYS],
            keys_format=FORMATS[c[KEYS_FORMAT_CLASS].strip()],
            store_headers=c[STORE_KAFKA_HEADERS],
            headers_format=FORMATS[c[HEADERS_FORMAT_CLASS].strip()],
        )


def _layout_rules(c: Mapping[str, Any], *, sink: bool) -> None:
    """Rules between layout keys; each raise names the key to fix."""
    kind = PARTITIONERS[c[PARTITIONER_CLASS].strip()]
    fmt = FORMATS[c[FORMAT_CLASS].strip()]
    if sink and fmt not in SINK_FORMATS:
        raise ConfigError(
            FORMAT_CLASS,
            c[FORMAT_CLASS],
            "the sink writes json, avro, "
            "parquet or bytearray objects (csv is read by the source only)",
        )
    if c[STORE_KAFKA_KEYS] and FORMATS[c[KEYS_FORMAT_CLASS].strip()] == "csv":
        raise ConfigError(
            KEYS_FORMAT_CLASS,
            c[KEYS_FORMAT_CLASS],
            "keys are written as json, avro, parquet or bytearray",
        )
    if c[STORE_KAFKA_HEADERS] and FORMATS[c[HEADERS_FORMAT_CLASS].strip()] not in (
        "json",
        "avro",
        "parquet",
    ):
        raise ConfigError(
            HEADERS_FORMAT_CLASS,
            c[HEADERS_FORMAT_CLASS],
            "headers are structured (a name and a value each): json, avro or parquet",
        )
    if kind == "field" and not c[PARTITION_FIELD_NAME]:
        raise ConfigError(PARTITION_FIELD_NAME, None, "the FieldPartitioner needs the fields")
    if kind == "time":
        if not c[PATH_FORMAT]:
            raise ConfigError(PATH_FORMAT, None, "the TimeBasedPartitioner needs a path.format")
        if c[PARTITION_DURATION_MS] <= 0:
            raise ConfigError(
                PARTITION_DURATION_MS,
                c[PARTITION_DURATION_MS],
                "the TimeBasedPartitioner needs a positive duration",
            )
    if kind in ("time", "daily", "hourly") and not c[TIMEZONE]:
        raise ConfigError(TIMEZONE, None, f"the {kind} partitioner needs a time zone")
    if c[DIRECTORY_DELIM] in c[FILE_DELIM] or c[FILE_DELIM] in c[DIRECTORY_DELIM]:
        raise ConfigError(FILE_DELIM, c[FILE_DELIM], "must differ from directory.delim")


@dataclass(frozen=True, slots=True)
class SinkSettings:
    store: StoreSettings
    layout: LayoutSettings
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_interval_ms: int
    schema_compatibility: str
    ignore_null_values: bool
    max_open_files: int
    #: `s3.conditional.writes`, where the layout replays byte for byte (see its doc).
    conditional_writes: bool

    @staticmethod
    def parse(props: Mapping[str, Any]) -> SinkSettings:
        c = SINK_CONFIG.parse(props)
        _layout_rules(c, sink=True)
        if c[ROTATE_SCHEDULE_INTERVAL_MS] > 0 and not c[TIMEZONE]:
            raise ConfigError(
                TIMEZONE,
                None,
                "scheduled rotation (rotate.schedule.interval.ms) needs a time zone to align to",
            )
        return SinkSettings(
            store=StoreSettings.of(c),
            layout=LayoutSettings.of(c),
            flush_size=c[FLUSH_SIZE],
            rotate_interval_ms=c[ROTATE_INTERVAL_MS],
            rotate_schedule_interval_ms=c[ROTATE_SCHEDULE_INTERVAL_MS],
            schema_compatibility=c[SCHEMA_COMPATIBILITY].upper(),
            ignore_null_values=c[NULL_VALUES].lower() == "ignore",
            max_open_files=c[MAX_OPEN_FILES],
            conditional_writes=c[CONDITIONAL_WRITES] and _deterministic(c),
        )


def _deterministic(c: Mapping[str, Any]) -> bool:
    """Whether a replay cuts the same objects: no wall clock decides a boundary."""
    if c[ROTATE_SCHEDULE_INTERVAL_MS] > 0:
        return False
    wallclock = EXTRACTORS[c[TIMESTAMP_EXTRACTOR].strip()] == "wallclock"
    time_based = PARTITIONERS[c[PARTITIONER_CLASS].strip()] in ("time", "daily", "hourly")
    return not (wallclock and (time_based or c[ROTATE_INTERVAL_MS] > 0))


@dataclass(frozen=True, slots=True)
class SourceSettings:
    store: StoreSettings
    layout: LayoutSettings
    generic: bool
    topic_regexes: tuple[tuple[str, re.Pattern[str]], ...]
    poll_interval_ms: int
    batch_max_size: int
    csv_header: bool
    task_id: int
    task_count: int

    @staticmethod
    def parse(props: Mapping[str, Any]) -> SourceSettings:
        c = SOURCE_CONFIG.parse(props)
        _layout_rules(c, sink=False)
        generic = c[MODE].upper() == "GENERIC"
        if generic and not c[TOPIC_REGEX_LIST]:
            raise ConfigError(TOPIC_REGEX_LIST, None, "GENERIC mode needs <topic>:<regex> pairs")
        if not generic and FORMATS[c[FORMAT_CLASS].strip()] == "csv":
            raise ConfigError(
                FORMAT_CLASS,
                c[FORMAT_CLASS],
                "S3Sink never writes csv: a restore reads json, avro, parquet or bytearray",
            )
        pairs = tuple(
            (topic, re.compile(regex))
            for topic, _, regex in (item.partition(":") for item in c[TOPIC_REGEX_LIST])
        )
        return SourceSettings(
            store=StoreSettings.of(c),
            layout=LayoutSettings.of(c),
            generic=generic,
            topic_regexes=pairs,
            poll_interval_ms=c[POLL_INTERVAL_MS],
            batch_max_size=c[BATCH_MAX_SIZE],
            csv_header=c[CSV_HEADER],
            task_id=c[TASK_ID],
            task_count=c[TASK_COUNT],
        )


def _validate(
    definition: ConfigDef, parse: Callable[[Mapping[str, Any]], object], props: Mapping[str, Any]
) -> list[ConfigValue]:
    """Per-key results; a rule between keys is reported on the key it names."""
    results = definition.validate(props)
    if any(r.errors for r in results):
        return results
    try:
        parse(props)
    except ConfigError as exc:
        for r in results:
            if r.name == exc.name:
                r.errors.append(str(exc))
    return results


def validate_sink(props: Mapping[str, Any]) -> list[ConfigValue]:
    return _validate(SINK_CONFIG, SinkSettings.parse, props)


def validate_source(props: Mapping[str, Any]) -> list[ConfigValue]:
    return _validate(SOURCE_CONFIG, SourceSettings.parse, props)
