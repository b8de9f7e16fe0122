"""The S3 connectors' configuration: Confluent's key names, declared once.

Three groups of keys, shared where Confluent shares them:

- `STORE`: where and how to reach S3 (bucket, region, endpoint, credentials, part size,
  retries) — both connectors;
- `LAYOUT`: how objects are named and what they hold (`topics.dir`, delimiters, the
  format and the partitioner with their keys) — both connectors, so a restore reads
  what a sink wrote by being given the same keys;
- the sink's rotation keys (`flush.size`, `rotate.interval.ms`,
  `rotate.schedule.interval.ms`, `schema.compatibility`, …) and the source's (`mode`,
  `topic.regex.list`, `s3.poll.interval.ms`, …).

`SinkSettings.parse` / `SourceSettings.parse` apply a ConfigDef and then the rules
that tie keys together (a FieldPartitioner needs `partition.field.name`, scheduled
rotation needs `timezone`, …), raising `ConfigError` naming the key. `validate_*`
report the same problems per key for the REST validate endpoint.

Secrets (`aws.secret.access.key`) are PASSWORD keys: they print as `[hidden]`.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable, Mapping
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
    non_empty_string,
    one_of,
)

__all__ = [
    "LAYOUT",
    "SINK_CONFIG",
    "SOURCE_CONFIG",
    "STORE",
    "LayoutSettings",
    "SinkSettings",
    "SourceSettings",
    "StoreSettings",
    "validate_sink",
    "validate_source",
]

MiB = 1024 * 1024

# ------------------------------------------------------------------ store keys
S3_BUCKET = "s3.bucket.name"
S3_REGION = "s3.region"
STORE_URL = "store.url"
ACCESS_KEY_ID = "aws.access.key.id"
SECRET_ACCESS_KEY = "aws.secret.access.key"
CREDENTIALS_PROVIDER = "s3.credentials.provider.class"
PATH_STYLE = "s3.path.style.access.enabled"
PART_SIZE = "s3.part.size"
PART_RETRIES = "s3.part.retries"
RETRY_BACKOFF_MS = "s3.retry.backoff.ms"
CONNECT_TIMEOUT_MS = "s3.http.connect.timeout.ms"
READ_TIMEOUT_MS = "s3.http.read.timeout.ms"

# ----------------------------------------------------------------- layout keys
TOPICS_DIR = "topics.dir"
DIRECTORY_DELIM = "directory.delim"
FILE_DELIM = "file.delim"
ZERO_PAD = "filename.offset.zero.pad.width"
FORMAT_CLASS = "format.class"
COMPRESSION_TYPE = "s3.compression.type"
COMPRESSION_LEVEL = "s3.compression.level"
AVRO_CODEC = "avro.codec"
PARQUET_CODEC = "parquet.codec"
BYTEARRAY_EXTENSION = "format.bytearray.extension"
BYTEARRAY_SEPARATOR = "format.bytearray.separator"
JSON_DECIMAL_FORMAT = "json.decimal.format"
PARTITIONER_CLASS = "partitioner.class"
PARTITION_FIELD_NAME = "partition.field.name"
PATH_FORMAT = "path.format"
PARTITION_DURATION_MS = "partition.duration.ms"
LOCALE = "locale"
TIMEZONE = "timezone"
TIMESTAMP_EXTRACTOR = "timestamp.extractor"
TIMESTAMP_FIELD = "timestamp.field"
STORE_KAFKA_KEYS = "store.kafka.keys"
KEYS_FORMAT_CLASS = "keys.format.class"
STORE_KAFKA_HEADERS = "store.kafka.headers"
HEADERS_FORMAT_CLASS = "headers.format.class"

# ------------------------------------------------------------------- sink keys
FLUSH_SIZE = "flush.size"
ROTATE_INTERVAL_MS = "rotate.interval.ms"
ROTATE_SCHEDULE_INTERVAL_MS = "rotate.schedule.interval.ms"
SCHEMA_COMPATIBILITY = "schema.compatibility"
NULL_VALUES = "behavior.on.null.values"
MAX_OPEN_FILES = "partitioner.max.open.files"
CONDITIONAL_WRITES = "s3.conditional.writes"
STORAGE_CLASS = "storage.class"

# ----------------------------------------------------------------- source keys
MODE = "mode"
TOPIC_REGEX_LIST = "topic.regex.list"
POLL_INTERVAL_MS = "s3.poll.interval.ms"
BATCH_MAX_SIZE = "record.batch.max.size"
CSV_HEADER = "csv.first.row.as.header"
TASK_ID = "task.id"
TASK_COUNT = "task.count"

_DEFAULT_CHAIN = "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"

FORMATS: dict[str, str] = {
    "io.confluent.connect.s3.format.json.JsonFormat": "json",
    "io.confluent.connect.s3.format.avro.AvroFormat": "avro",
    "io.confluent.connect.s3.format.parquet.ParquetFormat": "parquet",
    "io.confluent.connect.s3.format.bytearray.ByteArrayFormat": "bytearray",
    "io.confluent.connect.s3.format.csv.CsvFormat": "csv",
    "io.confluent.connect.cloud.storage.source.format.CloudStorageJsonFormat": "json",
    "io.confluent.connect.cloud.storage.source.format.CloudStorageAvroFormat": "avro",
    "io.confluent.connect.cloud.storage.source.format.CloudStorageParquetFormat": "parquet",
    "io.confluent.connect.cloud.storage.source.format.CloudStorageByteArrayFormat": "bytearray",
    "io.confluent.connect.cloud.storage.source.format.CloudStorageCsvFormat": "csv",
    "JsonFormat": "json",
    "AvroFormat": "avro",
    "ParquetFormat": "parquet",
    "ByteArrayFormat": "bytearray",
    "CsvFormat": "csv",
    "json": "json",
    "avro": "avro",
    "parquet": "parquet",
    "bytearray": "bytearray",
    "csv": "csv",
}
_SINK_FORMATS = {"json", "avro", "parquet", "bytearray"}

_PARTITIONER_PREFIX = "io.confluent.connect.storage.partitioner."
PARTITIONERS: dict[str, str] = {}
for _short, _kind in (
    ("DefaultPartitioner", "default"),
    ("FieldPartitioner", "field"),
    ("TimeBasedPartitioner", "time"),
    ("DailyPartitioner", "daily"),
    ("HourlyPartitioner", "hourly"),
):
    PARTITIONERS[_PARTITIONER_PREFIX + _short] = _kind
    PARTITIONERS[_short] = _kind
    PARTITIONERS[_kind] = _kind

EXTRACTORS: dict[str, str] = {
    "Record": "record",
    "RecordField": "recordfield",
    "Wallclock": "wallclock",
    _PARTITIONER_PREFIX + "TimeBasedPartitioner$RecordTimestampExtractor": "record",
    _PARTITIONER_PREFIX + "TimeBasedPartitioner$RecordFieldTimestampExtractor": "recordfield",
    _PARTITIONER_PREFIX + "TimeBasedPartitioner$WallclockTimestampExtractor": "wallclock",
}
_STORAGE_CLASSES = ("io.confluent.connect.s3.storage.S3Storage", "S3Storage")


def _alias(table: Mapping[str, str], what: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and str(value).strip() not in table:
            known = sorted({k for k in table if "." in k}) or sorted(table)
            raise ConfigError(name, value, f"unknown {what}; one of: {', '.join(known)}")

    check.__doc__ = "[" + ", ".join(sorted(k for k in table if "." not in k)) + "]"
    return check


def _timezone(name: str, value: Any) -> None:
    if value:
        try:
            zoneinfo.ZoneInfo(str(value))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ConfigError(name, value, "not a time zone id (e.g. UTC, Europe/Paris)") from None


def _locale(name: str, value: Any) -> None:
    if value:
        from connectors.s3.locales import check_locale  # Babel: only when a locale is set

        problem = check_locale(value)
        if problem is not None:
            raise ConfigError(name, value, problem)


def _bucket_name(name: str, value: Any) -> None:
    non_empty_string(name, value)
    if value is not None and not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", str(value)):
        raise ConfigError(
            name, value, "an S3 bucket name: 3-63 lowercase letters, digits, dots and hyphens"
        )


def _url(name: str, value: Any) -> None:
    if value and not re.match(r"^https?://[^/\s]+", str(value)):
        raise ConfigError(name, value, "an http:// or https:// URL")


def _credentials_provider(name: str, value: Any) -> None:
    if value and value != _DEFAULT_CHAIN:
        raise ConfigError(
            name,
            value,
            f"only {_DEFAULT_CHAIN} (boto3's credential chain: environment, shared "
            "files, instance roles) is supported; or set aws.access.key.id and "
            "aws.secret.access.key",
        )


def _storage_class(name: str, value: Any) -> None:
    if value and value not in _STORAGE_CLASSES:
        raise ConfigError(name, value, f"must be {_STORAGE_CLASSES[0]}")


def _topics_dir(name: str, value: Any) -> None:
    """Published configs name the prefix as a path (`/raw/kafka/topics`, `backup/`): the
    slashes around it are dropped, and an empty prefix (Confluent's "") puts the topics
    at the bucket's root. A `..` segment is refused: stores with a file-system view of
    the bucket (MinIO, SeaweedFS's filer, s3fs mounts) resolve it out of the prefix."""
    if value is None:
        raise ConfigError(name, value, 'a prefix is needed ("" for none)')
    if ".." in str(value).split("/"):
        raise ConfigError(name, value, "a prefix without '..' segments")


def _unsupported(reason: str) -> Callable[[str, Any], None]:
    """A validator for a key of Confluent's S3 sink whose feature this sink does not
    have: unset or empty is accepted, a value is refused with `reason` (a silent
    ignore would store objects without what the key asked for)."""

    def check(name: str, value: Any) -> None:
        if value not in (None, "", False):
            raise ConfigError(name, value, reason)

    return check


def _topic_regex_list(name: str, value: Any) -> None:
    for item in value or []:
        topic, sep, regex = item.partition(":")
        if not sep or not topic or not regex:
            raise ConfigError(name, value, f"{item!r} is not a <topic>:<regex> pair")
        try:
            re.compile(regex)
        except re.error as exc:
            raise ConfigError(name, value, f"bad regex {regex!r}: {exc}") from None


_S = "S3"
STORE = (
    ConfigDef()
    .define(
        S3_BUCKET,
        ConfigType.STRING,
        validator=_bucket_name,
        importance=Importance.HIGH,
        documentation="The S3 bucket.",
        group=_S,
    )
    .define(
        S3_REGION,
        ConfigType.STRING,
        "us-west-2",
        non_empty_string,
        Importance.MEDIUM,
        "The AWS region of the bucket.",
        group=_S,
    )
    .define(
        STORE_URL,
        ConfigType.STRING,
        None,
        _url,
        Importance.HIGH,
        "The endpoint of an S3-compatible store (empty: AWS's own).",
        group=_S,
    )
    .define(
        ACCESS_KEY_ID,
        ConfigType.STRING,
        "",
        None,
        Importance.HIGH,
        "Access key id; empty: boto3's credential chain (environment, shared files, "
        "instance roles).",
        group=_S,
    )
    .define(
        SECRET_ACCESS_KEY,
        ConfigType.PASSWORD,
        "",
        None,
        Importance.HIGH,
        "Secret access key (use a config provider, e.g. ${file:…}); never logged.",
        group=_S,
    )
    .define(
        CREDENTIALS_PROVIDER,
        ConfigType.CLASS,
        _DEFAULT_CHAIN,
        _credentials_provider,
        Importance.LOW,
        "The credentials provider: boto3's default chain.",
        group=_S,
    )
    .define(
        PATH_STYLE,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Path-style addressing (bucket in the path, not the host name).",
        group=_S,
    )
    .define(
        PART_SIZE,
        ConfigType.INT,
        25 * MiB,
        at_least(5 * MiB),
        Importance.HIGH,
        "Multipart upload part size in bytes: the buffer held per open file, so memory "
        "is about this times the number of open files.",
        group=_S,
    )
    .define(
        PART_RETRIES,
        ConfigType.INT,
        3,
        at_least(0),
        Importance.MEDIUM,
        "Retries of each S3 request (a part, a put, a completion) before the writer "
        "starts the open files over from the last committed offset.",
        group=_S,
    )
    .define(
        RETRY_BACKOFF_MS,
        ConfigType.LONG,
        200,
        at_least(0),
        Importance.LOW,
        "Backoff before the first retry, doubling on each one (at most 10 s).",
        group=_S,
    )
    .define(
        CONNECT_TIMEOUT_MS,
        ConfigType.INT,
        5000,
        at_least(1),
        Importance.LOW,
        "Connect timeout of one S3 request.",
        group=_S,
    )
    .define(
        READ_TIMEOUT_MS,
        ConfigType.INT,
        60000,
        at_least(1),
        Importance.LOW,
        "Read timeout of one S3 request.",
        group=_S,
    )
)

_L = "Storage"
LAYOUT = (
    ConfigDef()
    .define(
        TOPICS_DIR,
        ConfigType.STRING,
        "topics",
        _topics_dir,
        Importance.HIGH,
        "Top-level prefix of the objects; leading and trailing slashes are dropped "
        "(/raw/kafka/topics writes raw/kafka/topics/<topic>/…); empty: no prefix.",
        group=_L,
    )
    .define(
        DIRECTORY_DELIM,
        ConfigType.STRING,
        "/",
        non_empty_string,
        Importance.MEDIUM,
        "Delimiter between the parts of an object's path.",
        group=_L,
    )
    .define(
        FILE_DELIM,
        ConfigType.STRING,
        "+",
        non_empty_string,
        Importance.MEDIUM,
        "Delimiter between topic, partition and start offset in object names.",
        group=_L,
    )
    .define(
        ZERO_PAD,
        ConfigType.INT,
        10,
        at_least(0),
        Importance.LOW,
        "Width to which start offsets are zero-padded in object names.",
        group=_L,
    )
    .define(
        FORMAT_CLASS,
        ConfigType.CLASS,
        validator=_alias(FORMATS, "format"),
        importance=Importance.HIGH,
        documentation="The object format.",
        group=_L,
    )
    .define(
        COMPRESSION_TYPE,
        ConfigType.STRING,
        "none",
        one_of("none", "gzip"),
        Importance.LOW,
        "Compression of JSON and ByteArray objects.",
        group=_L,
    )
    .define(
        COMPRESSION_LEVEL,
        ConfigType.INT,
        -1,
        None,
        Importance.LOW,
        "gzip level (-1: zlib's default).",
        group=_L,
    )
    .define(
        AVRO_CODEC,
        ConfigType.STRING,
        "null",
        one_of("null", "deflate", "bzip2", "xz"),
        Importance.LOW,
        "Avro container codec.",
        group=_L,
    )
    .define(
        PARQUET_CODEC,
        ConfigType.STRING,
        "snappy",
        one_of("none", "snappy", "gzip", "lz4", "zstd", "brotli"),
        Importance.LOW,
        "Parquet compression codec.",
        group=_L,
    )
    .define(
        BYTEARRAY_EXTENSION,
        ConfigType.STRING,
        ".bin",
        None,
        Importance.LOW,
        "Extension of ByteArray objects.",
        group=_L,
    )
    .define(
        BYTEARRAY_SEPARATOR,
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Separator between ByteArray values (default: a newline).",
        group=_L,
    )
    .define(
        JSON_DECIMAL_FORMAT,
        ConfigType.STRING,
        "BASE64",
        one_of("BASE64", "NUMERIC"),
        Importance.LOW,
        "How JSON objects write Decimal values.",
        group=_L,
    )
    .define(
        PARTITIONER_CLASS,
        ConfigType.CLASS,
        _PARTITIONER_PREFIX + "DefaultPartitioner",
        _alias(PARTITIONERS, "partitioner"),
        Importance.HIGH,
        "How records map to directories.",
        group=_L,
    )
    .define(
        PARTITION_FIELD_NAME,
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "FieldPartitioner: the value fields (dotted paths allowed) naming the directory.",
        group=_L,
    )
    .define(
        PATH_FORMAT,
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "TimeBasedPartitioner: a Joda-style pattern such as "
        "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH.",
        group=_L,
    )
    .define(
        PARTITION_DURATION_MS,
        ConfigType.LONG,
        -1,
        None,
        Importance.MEDIUM,
        "TimeBasedPartitioner: the width of a time directory.",
        group=_L,
    )
    .define(
        LOCALE,
        ConfigType.STRING,
        "",
        _locale,
        Importance.LOW,
        "TimeBasedPartitioner: the locale of month and weekday names in path.format "
        "(MMM, MMMM, EEE, EEEE), e.g. fr-FR or de_DE (empty: English).",
        group=_L,
    )
    .define(
        TIMEZONE,
        ConfigType.STRING,
        "",
        _timezone,
        Importance.MEDIUM,
        "Time zone of time directories and of scheduled rotation.",
        group=_L,
    )
    .define(
        TIMESTAMP_EXTRACTOR,
        ConfigType.STRING,
        "Wallclock",
        _alias(EXTRACTORS, "timestamp extractor"),
        Importance.MEDIUM,
        "Where a record's time comes from: Record, RecordField or Wallclock.",
        group=_L,
    )
    .define(
        TIMESTAMP_FIELD,
        ConfigType.STRING,
        "timestamp",
        non_empty_string,
        Importance.LOW,
        "RecordField: the value field holding the time.",
        group=_L,
    )
    .define(
        STORE_KAFKA_KEYS,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Also write the record keys, in a `.keys.<ext>` object beside each object "
        "(and read them back on restore).",
        group=_L,
    )
    .define(
        KEYS_FORMAT_CLASS,
        ConfigType.CLASS,
        "io.confluent.connect.s3.format.avro.AvroFormat",
        _alias(FORMATS, "format"),
        Importance.LOW,
        "The format of the key objects.",
        group=_L,
    )
    .define(
        STORE_KAFKA_HEADERS,
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Also write the record headers, in a `.headers.<ext>` object beside each object "
        "(and read them back on restore).",
        group=_L,
    )
    .define(
        HEADERS_FORMAT_CLASS,
        ConfigType.CLASS,
        "io.confluent.connect.s3.format.avro.AvroFormat",
        _alias(FORMATS, "format"),
        Importance.LOW,
        "The format of the header objects: json, avro or parquet.",
        group=_L,
    )
)

_R = "Rotation"
SINK_CONFIG = STORE.merged(LAYOUT).merged(
    ConfigDef()
    .define(
        FLUSH_SIZE,
        ConfigType.INT,
        validator=at_least(1),
        importance=Importance.HIGH,
        documentation="Records of one topic partition per set of objects.",
        group=_R,
    )
    .define(
        ROTATE_INTERVAL_MS,
        ConfigType.LONG,
        -1,
        None,
        Importance.HIGH,
        "Rotate when a record's time is this far past the first record's of the open "
        "objects (record time: deterministic).",
        group=_R,
    )
    .define(
        ROTATE_SCHEDULE_INTERVAL_MS,
        ConfigType.LONG,
        -1,
        None,
        Importance.MEDIUM,
        "Rotate on the wall clock, even on a quiet partition; trades away "
        "byte-identical replay after a crash.",
        group=_R,
    )
    .define(
        SCHEMA_COMPATIBILITY,
        ConfigType.STRING,
        "NONE",
        one_of("NONE", "BACKWARD", "FORWARD", "FULL"),
        Importance.HIGH,
        "How schema changes rotate objects.",
        group=_R,
    )
    .define(
        NULL_VALUES,
        ConfigType.STRING,
        "fail",
        one_of("fail", "ignore"),
        Importance.LOW,
        "Records with null values (tombstones): fail the task or skip them.",
        group=_R,
    )
    .define(
        MAX_OPEN_FILES,
        ConfigType.INT,
        -1,
        None,
        Importance.LOW,
        "Most open objects per topic partition before all are committed (-1: no limit).",
        group=_R,
    )
    .define(
        STORAGE_CLASS,
        ConfigType.CLASS,
        _STORAGE_CLASSES[0],
        _storage_class,
        Importance.LOW,
        "The storage: S3.",
        group=_R,
    )
    .define(
        "schema.generator.class",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Accepted from Confluent's published configs: it generates Hive schemas, and this "
        "sink has no Hive integration.",
        group=_R,
    )
    .define(
        "retry.backoff.ms",
        ConfigType.LONG,
        5_000,
        at_least(0),
        Importance.LOW,
        "Accepted from Confluent's configs; not used here: an upload is retried per "
        "s3.part.retries and s3.retry.backoff.ms.",
        group=_R,
    )
    .define(
        "schema.cache.size",
        ConfigType.INT,
        1000,
        at_least(0),
        Importance.LOW,
        "Accepted from Confluent's configs (the size of its Avro schema cache); not used here.",
        group=_R,
    )
    .define(
        "s3.ssea.name",
        ConfigType.STRING,
        "",
        _unsupported(
            "server-side encryption is not set per object by this sink; set the bucket's "
            "default encryption (it applies to every object written) and remove this key"
        ),
        Importance.LOW,
        "Not supported: set the bucket's default encryption instead.",
        group=_S,
    )
    .define(
        "s3.sse.kms.key.id",
        ConfigType.STRING,
        "",
        _unsupported(
            "server-side encryption is not set per object by this sink; set the bucket's "
            "default encryption with this KMS key and remove this key"
        ),
        Importance.LOW,
        "Not supported: set the bucket's default encryption instead.",
        group=_S,
    )
    .define(
        "s3.acl.canned",
        ConfigType.STRING,
        "",
        _unsupported(
            "canned ACLs are not set by this sink; grant access with a bucket policy (or "
            "Object Ownership: bucket owner enforced) and remove this key"
        ),
        Importance.LOW,
        "Not supported: grant access with a bucket policy instead.",
        group=_S,
    )
    .define(
        CONDITIONAL_WRITES,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Complete objects with If-None-Match: * so a completed object is never replaced "
        "(a zombie task or a run with other settings is refused and fails; a replay's "
        "identical object is recognised by its ETag). Applies to deterministic layouts "
        "only: with rotate.schedule.interval.ms or Wallclock time a replay may cut another "
        "object under the same name, which must replace the first.",
        group=_S,
    )
)

_SRC = "Source"
SOURCE_CONFIG = STORE.merged(LAYOUT).merged(
    ConfigDef()
    .define(
        MODE,
        ConfigType.STRING,
        "RESTORE_BACKUP",
        one_of("RESTORE_BACKUP", "GENERIC"),
        Importance.HIGH,
        "RESTORE_BACKUP reads what S3Sink wrote back into its topics "
        "and partitions; GENERIC reads any objects under topics.dir.",
        group=_SRC,
    )
    .define(
        TOPIC_REGEX_LIST,
        ConfigType.LIST,
        "",
        _topic_regex_list,
        Importance.HIGH,
        "GENERIC: <topic>:<regex> pairs; an object whose key matches the regex goes to the topic.",
        group=_SRC,
    )
    .define(
        POLL_INTERVAL_MS,
        ConfigType.LONG,
        60000,
        at_least(0),
        Importance.MEDIUM,
        "How often the bucket is listed again for new objects.",
        group=_SRC,
    )
    .define(
        BATCH_MAX_SIZE,
        ConfigType.INT,
        10000,
        at_least(1),
        Importance.LOW,
        "Most records one poll returns.",
        group=_SRC,
    )
    .define(
        CSV_HEADER,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "CSV: the first row names the columns.",
        group=_SRC,
    )
    .define(
        TASK_ID,
        ConfigType.INT,
        0,
        at_least(0),
        Importance.LOW,
        "Set by the connector.",
        internal=True,
    )
    .define(
        TASK_COUNT,
        ConfigType.INT,
        1,
        at_least(1),
        Importance.LOW,
        "Set by the connector.",
        internal=True,
    )
)


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
    if sink and fmt not in _SINK_FORMATS:
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
