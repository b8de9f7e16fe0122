"""SparkParquetSink's configuration: Confluent's HDFS 3 sink keys, plus the Spark ones.

Keys carry over from `io.confluent.connect.hdfs3.Hdfs3SinkConnector` (`store.url` /
`hdfs.url`, `topics.dir`, `logs.dir`, `flush.size`, `rotate.interval.ms`,
`rotate.schedule.interval.ms`, the partitioner keys of the storage connectors,
`timezone`, `locale`), so existing configs move over. Added: `path` (a plain
directory instead of a URL), `spark.master`, `spark.conf.*` (passed to the
SparkSession as they are), `parquet.writer`, `parquet.codec` and `value.format`.

`parse(props)` returns a `SinkSettings`; every refusal is a ConfigError naming the key.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from connect.api import ConfigDef, ConfigError, ConfigType, Importance, at_least, one_of

__all__ = ["CONFIG", "SPARK_CONF_PREFIX", "SinkSettings", "parse"]

SPARK_CONF_PREFIX = "spark.conf."
_STORE = "Storage"
_PARTITIONER = "Partitioner"
_SPARK = "Spark"

PARTITIONERS = {
    # short name → kind; Confluent's class names map onto the same kinds
    "DefaultPartitioner": "default",
    "FieldPartitioner": "field",
    "TimeBasedPartitioner": "time",
    "DailyPartitioner": "daily",
    "HourlyPartitioner": "hourly",
}
_CONFLUENT_PARTITIONER_PACKAGES = (
    "io.confluent.connect.storage.partitioner.",
    "io.confluent.connect.hdfs.partitioner.",  # the HDFS 2 sink's own, in its published configs
)
EXTRACTORS = ("Record", "RecordField", "Wallclock")
_EXTRACTOR_PACKAGE = "io.confluent.connect.storage.partitioner.TimeBasedPartitioner$"


def _partitioner(name: str, value: Any) -> None:
    if partitioner_kind(value) is None:
        raise ConfigError(name, value, f"not one of {', '.join(PARTITIONERS)}")


def partitioner_kind(value: str) -> str | None:
    """'default', 'field', 'time', 'daily' or 'hourly' for a short or Confluent name."""
    short = value
    for package in _CONFLUENT_PARTITIONER_PACKAGES:
        short = short.removeprefix(package)
    short = short.removeprefix("hourly.").removeprefix("daily.").removeprefix("field.")
    return PARTITIONERS.get(short)


def extractor_kind(value: str) -> str | None:
    short = value.removeprefix(_EXTRACTOR_PACKAGE).removesuffix("TimestampExtractor")
    return short if short in EXTRACTORS else None


def _extractor(name: str, value: Any) -> None:
    if extractor_kind(value) is None:
        raise ConfigError(name, value, f"not one of {', '.join(EXTRACTORS)}")


def _zone(name: str, value: Any) -> None:
    if value in (None, ""):
        return
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(name, value, "not a known time zone") from None


def _dir_name(name: str, value: Any) -> None:
    """`topics.dir` / `logs.dir` as Confluent's HDFS sinks read them: the directory is
    `<store.url>/<value>`, so `/raw/kafka/topics` (the published configs' form) and
    `raw/kafka/topics/` both name `<store.url>/raw/kafka/topics`. Refused: nothing
    left once the slashes are stripped, a `..` segment (it would climb out of the
    store) and `+` (it separates topic, partition and offsets in the file names)."""
    if not isinstance(value, str) or not value.strip("/"):
        raise ConfigError(name, value, "a directory under the store, e.g. topics")
    if ".." in value.split("/"):
        raise ConfigError(name, value, "a directory under the store: '..' would climb out of it")
    if "+" in value:
        raise ConfigError(
            name, value, "a directory name without '+' (it separates the parts of the file names)"
        )


#: format.class values that mean Parquet files: what this sink writes.
PARQUET_FORMATS = (
    "io.confluent.connect.hdfs3.parquet.ParquetFormat",
    "io.confluent.connect.hdfs.parquet.ParquetFormat",
    "io.confluent.connect.s3.format.parquet.ParquetFormat",
    "ParquetFormat",
)


def _parquet_format(name: str, value: Any) -> None:
    if value in (None, "") or str(value).strip() in PARQUET_FORMATS:
        return
    raise ConfigError(
        name,
        value,
        "this sink writes Parquet files only (format.class "
        "io.confluent.connect.hdfs3.parquet.ParquetFormat); for Avro, JSON or text files "
        "use the S3 sink's format.class",
    )


def _off(reason: str) -> Any:
    """A validator for a boolean feature of Confluent's HDFS sinks that this sink does
    not have: false (the default) is accepted, true is refused with `reason`."""

    def check(name: str, value: Any) -> None:
        if value is True:
            raise ConfigError(name, value, reason)

    return check


def _accepted(doc: str) -> str:
    return f"Accepted from Confluent's HDFS sinks: {doc}"


CONFIG = (
    ConfigDef()
    .define(
        "store.url",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Where the lake lives: file:///abs/dir or hdfs://namenode:8020/dir",
        group=_STORE,
    )
    .define(
        "hdfs.url",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "The HDFS 2 sink's name for store.url",
        group=_STORE,
    )
    .define(
        "path",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "A local directory for the lake (instead of store.url; may be relative)",
        group=_STORE,
    )
    .define(
        "topics.dir",
        ConfigType.STRING,
        "topics",
        _dir_name,
        Importance.MEDIUM,
        "Directory under the store that holds one directory per topic",
        group=_STORE,
    )
    .define(
        "logs.dir",
        ConfigType.STRING,
        "logs",
        _dir_name,
        Importance.MEDIUM,
        "Directory under the store for the commit intents (one per topic partition)",
        group=_STORE,
    )
    .define(
        "format.class",
        ConfigType.STRING,
        None,
        _parquet_format,
        Importance.MEDIUM,
        "The file format: Parquet, under any of Confluent's ParquetFormat class names "
        "(default when unset: Parquet, where Confluent's HDFS sinks default to Avro)",
        group=_STORE,
    )
    .define(
        "storage.class",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        _accepted("the storage is chosen by store.url's scheme (file://, hdfs://)"),
        group=_STORE,
    )
    .define(
        "hadoop.conf.dir",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        _accepted(
            "Spark's session reads Hadoop's config from HADOOP_CONF_DIR and "
            "spark.conf.spark.hadoop.* keys"
        ),
        group=_STORE,
    )
    .define(
        "hadoop.home",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        _accepted("Spark's session finds Hadoop by its own classpath"),
        group=_STORE,
    )
    .define(
        "hdfs.authentication.kerberos",
        ConfigType.BOOLEAN,
        False,
        _off(
            "Kerberos is configured for Spark's session (kinit, or Hadoop's own config "
            "through spark.conf.spark.hadoop.* keys), not by this sink"
        ),
        Importance.LOW,
        "false only: Kerberos is configured for Spark's session, not by this sink",
        group=_STORE,
    )
    .define(
        "hive.integration",
        ConfigType.BOOLEAN,
        False,
        _off(
            "this sink does not create Hive tables; the Parquet files under "
            "<store>/<topics.dir>/<topic> can back an external table"
        ),
        Importance.LOW,
        "false only: this sink does not create Hive tables",
        group=_STORE,
    )
    .define(
        "retry.backoff.ms",
        ConfigType.LONG,
        5_000,
        at_least(0),
        Importance.LOW,
        _accepted("not used here: a write that fails fails the task"),
        group=_STORE,
    )
    .define(
        "schema.generator.class",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        _accepted("the Parquet schema follows the records' Connect schema"),
        group=_STORE,
    )
    .define(
        "flush.size",
        ConfigType.INT,
        100_000,
        at_least(1),
        Importance.HIGH,
        "Records of one topic partition after which its open files are committed",
        group=_STORE,
    )
    .define(
        "rotate.interval.ms",
        ConfigType.LONG,
        -1,
        at_least(-1),
        Importance.MEDIUM,
        "Commit a partition's files once the records' timestamps span this long "
        "(the records' own time: deterministic); -1: off",
        group=_STORE,
    )
    .define(
        "rotate.schedule.interval.ms",
        ConfigType.LONG,
        -1,
        at_least(-1),
        Importance.MEDIUM,
        "Commit open files on the wall clock, every this long (also when no record "
        "arrives); -1: off",
        group=_STORE,
    )
    .define(
        "schema.compatibility",
        ConfigType.STRING,
        "NONE",
        one_of("NONE"),
        Importance.LOW,
        "NONE: any change of a record's schema starts new files",
        group=_STORE,
    )
    .define(
        "behavior.on.null.values",
        ConfigType.STRING,
        "ignore",
        one_of("ignore", "fail"),
        Importance.LOW,
        "Records with a null value (tombstones): skip them or fail",
        group=_STORE,
    )
    .define(
        "value.format",
        ConfigType.STRING,
        "connect",
        one_of("connect", "json"),
        Importance.MEDIUM,
        "connect: values as the value.converter made them. json: values arrive as "
        "bytes (value.converter=ByteArrayConverter) in JsonConverter's format, with or "
        "without the schema envelope, and are decoded a batch at a time by Arrow's "
        "JSON reader (several times faster; transforms do not apply)",
        group=_STORE,
    )
    .define(
        "parquet.codec",
        ConfigType.STRING,
        "snappy",
        one_of("none", "snappy", "gzip", "zstd", "lz4"),
        Importance.LOW,
        "Compression of the Parquet files",
        group=_STORE,
    )
    .define(
        "filename.offset.zero.pad.width",
        ConfigType.INT,
        10,
        at_least(0),
        Importance.LOW,
        "Digits of the offsets in file names",
        group=_STORE,
    )
    .define(
        "partitioner.class",
        ConfigType.STRING,
        "DefaultPartitioner",
        _partitioner,
        Importance.HIGH,
        "How records map to directories: " + ", ".join(PARTITIONERS),
        group=_PARTITIONER,
    )
    .define(
        "partition.field.name",
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "FieldPartitioner: the value fields that name the directories",
        group=_PARTITIONER,
    )
    .define(
        "partition.duration.ms",
        ConfigType.LONG,
        -1,
        at_least(-1),
        Importance.MEDIUM,
        "TimeBasedPartitioner: the time span of one directory",
        group=_PARTITIONER,
    )
    .define(
        "path.format",
        ConfigType.STRING,
        "",
        None,
        Importance.MEDIUM,
        "TimeBasedPartitioner: Joda-style directory format, e.g. "
        "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
        group=_PARTITIONER,
    )
    .define(
        "locale",
        ConfigType.STRING,
        "en",
        None,
        Importance.LOW,
        "TimeBasedPartitioner: locale of the path format (numbers only: any)",
        group=_PARTITIONER,
    )
    .define(
        "timezone",
        ConfigType.STRING,
        "UTC",
        _zone,
        Importance.MEDIUM,
        "Time zone of the time-based directories and of scheduled rotation",
        group=_PARTITIONER,
    )
    .define(
        "timestamp.extractor",
        ConfigType.STRING,
        "Record",
        _extractor,
        Importance.MEDIUM,
        "Where a record's time comes from: Record (its log timestamp), RecordField "
        "(timestamp.field of the value) or Wallclock",
        group=_PARTITIONER,
    )
    .define(
        "timestamp.field",
        ConfigType.STRING,
        "timestamp",
        None,
        Importance.LOW,
        "RecordField: the value field holding the time",
        group=_PARTITIONER,
    )
    .define(
        "spark.master",
        ConfigType.STRING,
        "local[*]",
        None,
        Importance.HIGH,
        "Spark master URL of the session (local[*], spark://host:7077, yarn, ...)",
        group=_SPARK,
    )
    .define(
        "spark.app.name",
        ConfigType.STRING,
        "tributary-parquet-sink",
        None,
        Importance.LOW,
        "Spark application name",
        group=_SPARK,
    )
    .define(
        "parquet.writer",
        ConfigType.STRING,
        "auto",
        one_of("auto", "arrow", "spark"),
        Importance.MEDIUM,
        "Who writes the Parquet files: arrow (pyarrow in the task process, fast, "
        "file:// only), spark (the SparkSession, any Hadoop file system), auto: spark "
        "for non-file URLs or a non-local master, arrow otherwise",
        group=_SPARK,
    )
)


#: Keys of published HDFS 2/3 sink configs that only matter to a feature switched off
#: above (Hive, Kerberos) or to Confluent's licensing (the HDFS 3 sink is a licensed
#: connector; Tributary needs no license topic): accepted, so such a config runs.
_ACCEPTED_KEYS = {
    "hive.metastore.uris": "with hive.integration, which this sink does not have",
    "hive.database": "with hive.integration, which this sink does not have",
    "hive.conf.dir": "with hive.integration, which this sink does not have",
    "hive.home": "with hive.integration, which this sink does not have",
    "connect.hdfs.principal": "with hdfs.authentication.kerberos, configured for Spark instead",
    "connect.hdfs.keytab": "with hdfs.authentication.kerberos, configured for Spark instead",
    "hdfs.namenode.principal": "with hdfs.authentication.kerberos, configured for Spark instead",
    "kerberos.ticket.renew.period.ms": "with hdfs.authentication.kerberos, configured for "
    "Spark instead",
    "confluent.license": "Confluent's license key; no license is needed here",
    "confluent.topic": "Confluent's license topic; no license is needed here",
    "confluent.topic.bootstrap.servers": "Confluent's license topic; no license is needed here",
    "confluent.topic.replication.factor": "Confluent's license topic; no license is needed here",
}
for _key, _doc in _ACCEPTED_KEYS.items():
    CONFIG.define(
        _key, ConfigType.STRING, None, None, Importance.LOW, _accepted(_doc), group=_STORE
    )


@dataclass(frozen=True, slots=True)
class SinkSettings:
    """The parsed config; `root` is the store root URL (file:///… or hdfs://…)."""

    root: str
    topics_dir: str
    logs_dir: str
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_interval_ms: int
    on_null: str
    value_format: str
    codec: str
    pad: int
    partitioner: str
    partition_fields: tuple[str, ...]
    partition_duration_ms: int
    path_format: str
    timezone: str
    extractor: str
    timestamp_field: str
    spark_master: str
    spark_app_name: str
    spark_conf: dict[str, str] = field(default_factory=dict)
    writer: str = "arrow"

    @property
    def is_local(self) -> bool:
        return self.root.startswith("file:")

    @property
    def local_root(self) -> Path:
        """The store root as a local path (file:// stores only)."""
        return Path(urlparse(self.root).path)


def _root(values: Mapping[str, Any]) -> str:
    url = values["store.url"] or values["hdfs.url"]
    key = "store.url" if values["store.url"] else "hdfs.url"
    if url:
        parsed = urlparse(url)
        if parsed.scheme not in ("file", "hdfs", "viewfs", "webhdfs"):
            raise ConfigError(key, url, "a file:// or hdfs:// URL")
        if parsed.scheme == "file" and not parsed.path.startswith("/"):
            raise ConfigError(key, url, "a file:// URL needs an absolute path")
        return url.rstrip("/")
    if values["path"]:
        return Path(values["path"]).resolve().as_uri()
    raise ConfigError("store.url", None, "store.url (or path) is required")


_FORMAT_TOKEN = re.compile(r"'[^']*'|[A-Za-z]+|[^A-Za-z']+")


def parse(props: Mapping[str, str]) -> SinkSettings:
    """Typed settings; ConfigError naming the key for anything wrong."""
    values = CONFIG.parse(props)
    root = _root(values)
    kind = partitioner_kind(values["partitioner.class"]) or "default"
    fields = tuple(values["partition.field.name"])
    if kind == "field" and not fields:
        raise ConfigError("partition.field.name", None, "FieldPartitioner needs field names")
    duration, path_format = values["partition.duration.ms"], values["path.format"]
    if kind == "daily":
        duration, path_format = 86_400_000, "'year'=YYYY/'month'=MM/'day'=dd"
    elif kind == "hourly":
        duration, path_format = 3_600_000, "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH"
    if kind in ("time", "daily", "hourly"):
        if duration <= 0:
            raise ConfigError("partition.duration.ms", duration, "a positive duration is needed")
        if not path_format:
            raise ConfigError("path.format", path_format, "a path format is needed")
    spark_conf = {
        k[len(SPARK_CONF_PREFIX) :]: str(v)
        for k, v in props.items()
        if k.startswith(SPARK_CONF_PREFIX) and len(k) > len(SPARK_CONF_PREFIX)
    }
    writer = values["parquet.writer"]
    local_master = values["spark.master"].startswith("local")
    if writer == "auto":
        writer = "arrow" if root.startswith("file:") and local_master else "spark"
    elif writer == "arrow" and not root.startswith("file:"):
        raise ConfigError("parquet.writer", writer, f"pyarrow writes file:// only, not {root}")
    return SinkSettings(
        root=root,
        topics_dir=values["topics.dir"].strip("/"),
        logs_dir=values["logs.dir"].strip("/"),
        flush_size=values["flush.size"],
        rotate_interval_ms=values["rotate.interval.ms"],
        rotate_schedule_interval_ms=values["rotate.schedule.interval.ms"],
        on_null=values["behavior.on.null.values"],
        value_format=values["value.format"],
        codec=values["parquet.codec"],
        pad=values["filename.offset.zero.pad.width"],
        partitioner="time" if kind in ("daily", "hourly") else kind,
        partition_fields=fields,
        partition_duration_ms=duration,
        path_format=path_format,
        timezone=values["timezone"] or "UTC",
        extractor=extractor_kind(values["timestamp.extractor"]) or "Record",
        timestamp_field=values["timestamp.field"],
        spark_master=values["spark.master"],
        spark_app_name=values["spark.app.name"],
        spark_conf=spark_conf,
        writer=writer,
    )
