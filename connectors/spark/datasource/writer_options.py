"""The writer's options, after Spark's Kafka sink (`df.write.format("tributary")`).

- `log.dir`: the embedded log's directory (made absolute in the driver, as the
  reader's is), or `bootstrap.servers` for a Kafka cluster (KafkaLog; librdkafka
  settings as `kafka.<key>`, the Kafka sink's own prefix).
- `topic`: every row's topic; it wins over a `topic` column, as in Spark's Kafka sink.
  Without it a `topic` column is required, and a null in it fails the task.
- Columns as the Kafka sink reads them: `key` (string or binary), `value` (string or
  binary), `partition` (int; null or absent: the key's partition), `headers`
  (array<struct<key: string, value: binary>>), `timestamp` (timestamp; absent: now).
- `value.format`: `none` (default: the `value` column as it is), `json` or `avro`:
  the value is a struct column `value`, or, without one, every column but the ones
  above, encoded by the project's JsonConverter (schemas in the envelope) or
  AvroConverter (Confluent's wire format, schemas registered under `<topic>-value`
  in `schema.registry.url`: `embedded`, the default, is the log's own `_schemas`
  topic on a FileLog, or a registry's http(s) URL) — so Connect sinks read the topic
  with the converter they would use for a Connect source's.
- `value.converter`: another `connect.api.Converter` by dotted path; its settings as
  `value.converter.<key>` (e.g. `value.converter.schemas.enable=false`).
- `topic.partitions` / `topic.config.<key>`: how a topic that does not exist yet is
  created (default 1 partition; e.g. `topic.config.cleanup.policy=compact`).
- `staging.dir`: where tasks leave their encoded rows for the commit (see
  `connectors.spark.datasource.writer`); default `<log.dir>/.spark-staging`, or on
  Kafka `<checkpointLocation>/tributary-staging`, else the temp directory. On a
  cluster of machines it must be a directory every executor and the driver share.
- `transaction.timeout.ms`: the commit's transaction timeout (default 60000).
- `txnVersion` / `txnAppId` (batch writes; Delta Lake's names for the same thing):
  a batch write inside `foreachBatch` given the batch id as `txnVersion` is written
  at most once per (`txnAppId`, batch id), as a streaming write's micro-batch is;
  `txnAppId` defaults to the query id in `checkpointLocation`'s metadata.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

from connectors.spark.datasource.options import OptionError

__all__ = ["ROW_COLUMNS", "WriterOptions", "parse_writer_options"]

#: The columns that say where and how a row goes; with `value.format` json or avro
#: and no `value` column, the others are the value's fields.
ROW_COLUMNS = frozenset({"topic", "key", "partition", "headers", "timestamp"})

_CONVERTERS = {
    "json": "connect.converters.JsonConverter",
    "avro": "connect.converters.avro.AvroConverter",
}


@dataclass(frozen=True, slots=True)
class WriterOptions:
    log_dir: str | None
    bootstrap_servers: str | None
    kafka_config: dict[str, str]
    topic: str | None
    value_format: str
    converter_class: str | None
    converter_config: dict[str, str]
    topic_partitions: int
    topic_config: dict[str, str]
    staging_dir: str
    transaction_timeout_ms: int
    checkpoint: str | None = field(default=None)
    txn_app_id: str | None = field(default=None)
    txn_version: int | None = field(default=None)

    def open_log(self) -> object:
        """The log the rows go to (a FileLog must exist: a typo is not a new log)."""
        if self.bootstrap_servers:
            from log import KafkaLog

            return KafkaLog(self.bootstrap_servers, client_config=self.kafka_config)
        from log import FileLog

        assert self.log_dir is not None
        return FileLog(self.log_dir, background=False, create=False)


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v not in (None, "")}


def _prefixed(options: dict[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in options.items() if k.startswith(prefix)}


def _positive(options: dict[str, str], name: str, default: int) -> int:
    raw = options.get(name)
    try:
        value = int(raw) if raw is not None else default
        if value < 1:
            raise ValueError
    except ValueError:
        raise OptionError(name, raw, "a positive number") from None
    return value


def parse_writer_options(options: Mapping[str, str]) -> WriterOptions:
    """The options, checked in the driver before any task runs (Spark passes them
    lower-cased and as strings); a bad one is an OptionError naming it."""
    opts = _lowered(options)
    servers = opts.get("bootstrap.servers") or opts.get("kafka.bootstrap.servers")
    log_dir = opts.get("log.dir") or opts.get("logdir") or opts.get("path")
    if (servers is None) == (log_dir is None):
        raise OptionError("log.dir", log_dir, "give exactly one of log.dir or bootstrap.servers")
    value_format = opts.get("value.format", "none").lower()
    if value_format not in ("none", "json", "avro"):
        raise OptionError("value.format", value_format, "none, json or avro")
    converter_class = opts.get("value.converter") or _CONVERTERS.get(value_format)
    converter_config = {
        k: v for k, v in _prefixed(opts, "value.converter.").items() if k != "class"
    }
    if value_format == "avro":
        converter_config.setdefault(
            "schema.registry.url", opts.get("schema.registry.url", "embedded")
        )
        if converter_config["schema.registry.url"] == "embedded" and servers:
            raise OptionError(
                "schema.registry.url", "embedded", "the embedded registry needs log.dir"
            )
    checkpoint = opts.get("checkpointlocation")
    version = opts.get("txnversion")
    try:
        txn_version = int(version) if version is not None else None
        if txn_version is not None and txn_version < 0:
            raise ValueError
    except ValueError:
        raise OptionError("txnVersion", version, "a batch id (0 or more)") from None
    if txn_version is not None and checkpoint is None and "txnappid" not in opts:
        raise OptionError("txnAppId", None, "txnVersion needs txnAppId or checkpointLocation")
    if log_dir is not None:
        log_dir = os.path.abspath(log_dir)
        staging = os.path.join(log_dir, ".spark-staging")
    elif checkpoint is not None:
        staging = os.path.join(checkpoint, "tributary-staging")
    else:
        staging = os.path.join(tempfile.gettempdir(), "tributary-spark-staging")
    kafka_config = {
        k: v for k, v in _prefixed(opts, "kafka.").items() if k != "bootstrap.servers"
    }
    return WriterOptions(
        log_dir=log_dir,
        bootstrap_servers=servers,
        kafka_config=kafka_config,
        topic=opts.get("topic"),
        value_format=value_format,
        converter_class=converter_class,
        converter_config=converter_config,
        topic_partitions=_positive(opts, "topic.partitions", 1),
        topic_config=_prefixed(opts, "topic.config."),
        staging_dir=os.path.abspath(opts.get("staging.dir", staging)),
        transaction_timeout_ms=_positive(opts, "transaction.timeout.ms", 60_000),
        checkpoint=checkpoint,
        txn_app_id=opts.get("txnappid"),
        txn_version=txn_version,
    )
