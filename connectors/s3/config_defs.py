"""The S3 connectors' config keys and their declarations: Confluent's key names, once.

Three groups of keys, shared where Confluent shares them:

- `STORE`: where and how to reach S3 (bucket, region, endpoint, credentials, part size,
  retries) — both connectors;
- `LAYOUT`: how objects are named and what they hold (`topics.dir`, delimiters, the
  format and the partitioner with their keys) — both connectors, so a restore reads
  what a sink wrote by being given the same keys;
- the sink's rotation keys (`flush.size`, `rotate.interval.ms`,
  `rotate.schedule.interval.ms`, `schema.compatibility`, …) in `SINK_CONFIG` and the
  source's (`mode`, `topic.regex.list`, `s3.poll.interval.ms`, …) in `SOURCE_CONFIG`.

The alias tables map every name a published config may use for a format, a
partitioner or a timestamp extractor to the one this package acts on. Single-value
checks are in `config_validators`; parsing into typed settings and the rules between
keys in `config`.

Secrets (`aws.secret.access.key`) are PASSWORD keys: they print as `[hidden]`.
"""

from __future__ import annotations

from connect.api import (
    ConfigDef,
    ConfigType,
    Importance,
    at_least,
    non_empty_string,
    one_of,
)
from connectors.s3 import config_validators as check

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
SINK_FORMATS = {"json", "avro", "parquet", "bytearray"}

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

_S = "S3"
STORE = (
    ConfigDef()
    .define(
        S3_BUCKET,
        ConfigType.STRING,
        validator=check.bucket_name,
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
        check.url,
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
        check.DEFAULT_CREDENTIALS_CHAIN,
        check.credentials_provider,
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
        check.topics_dir,
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
        validator=check.alias(FORMATS, "format"),
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
        check.alias(PARTITIONERS, "partitioner"),
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
        check.locale,
        Importance.LOW,
        "TimeBasedPartitioner: the locale of month and weekday names in path.format "
        "(MMM, MMMM, EEE, EEEE), e.g. fr-FR or de_DE (empty: English).",
        group=_L,
    )
    .define(
        TIMEZONE,
        ConfigType.STRING,
        "",
        check.timezone,
        Importance.MEDIUM,
        "Time zone of time directories and of scheduled rotation.",
        group=_L,
    )
    .define(
        TIMESTAMP_EXTRACTOR,
        ConfigType.STRING,
        "Wallclock",
        check.alias(EXTRACTORS, "timestamp extractor"),
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
        check.alias(FORMATS, "format"),
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
        check.alias(FORMATS, "format"),
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
        check.STORAGE_CLASSES[0],
        check.storage_class,
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
        check.unsupported(
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
        check.unsupported(
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
        check.unsupported(
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
        check.topic_regex_list,
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
