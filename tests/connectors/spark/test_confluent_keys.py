"""Confluent's HDFS 2 / HDFS 3 sink keys as Confluent reads them, in SparkParquetSink.

Confluent's sinks put a topic's files in `<hdfs.url>/<topics.dir>/<topic>`, and the
configs people publish name `topics.dir` / `logs.dir` as absolute paths
(`/raw/kafka/topics`): those are directories under the store, as there. Published
configs also carry keys of features this sink does not have (Hive, Kerberos,
Confluent's license topic): accepted when they ask for nothing, refused naming the key
when they ask for what would otherwise silently not happen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from connect.api import ConfigError
from connect.worker.config import CONNECTOR_PASS_THROUGH, unknown_keys
from connect.worker.connector_config import SINK_CONNECTOR_CONFIG
from connectors.spark.config import CONFIG, parse
from connectors.spark.sink import SparkParquetSinkTask
from tests.connectors.spark.helpers import Context, records

# Published configs, as their authors wrote them (JSON numbers and booleans as the
# REST API turns them into strings); each test swaps in only the store's URL.
PUBLISHED: dict[str, dict[str, Any]] = {
    # confluentinc/kafka-connect-hdfs, config/quickstart-hdfs.properties,
    # commit adf588a2c0ece3cbf9554abee7ef4aba6164070b
    "confluent-quickstart-hdfs": {
        "name": "hdfs-sink",
        "connector.class": "io.confluent.connect.hdfs.HdfsSinkConnector",
        "tasks.max": "1",
        "topics": "test_hdfs",
        "hdfs.url": "hdfs://localhost:9000",
        "flush.size": "3",
    },
    # datnguyenzzz/E_commerce_django,
    # services/auto_complete/hadoop/kafka-sink-hdfs/scripts/hdfs-sink.sh
    "hdfs3-time-based": {
        "connector.class": "io.confluent.connect.hdfs3.Hdfs3SinkConnector",
        "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
        "partition.duration.ms": 1800000,
        "path.format": "YYYYMMdd_HHmm",
        "timestamp.extractor": "Record",
        "confluent.topic.bootstrap.servers": "kafka:9092",
        "tasks.max": "1",
        "topics": "words-from-client",
        "hdfs.url": "hdfs://hdfs-namenode:9000",
        "flush.size": "3",
        "locale": "en",
        "timezone": "UTC",
        "topics.dir": "/words/1_sink",
        "logs.dir": "/words/1_sink/logs",
        "name": "hdfs-sink-phrases",
    },
    # jasondavindev/open-dataplatform, api-ingestion/scripts/create_hdfs_connector.sh
    # (its connector-level "bootstrap.servers" is no key of the HDFS sinks: Kafka
    # Connect and Tributary both warn about it and go on)
    "hdfs-parquet-field": {
        "connector.class": "io.confluent.connect.hdfs.HdfsSinkConnector",
        "tasks.max": 3,
        "topics": "topic-example",
        "flush.size": 10,
        "hdfs.url": "hdfs://namenode:8020",
        "format.class": "io.confluent.connect.hdfs.parquet.ParquetFormat",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "http://schema-registry:8081",
        "topics.dir": "/kafka/topics",
        "logs.dir": "/kafka/logs",
        "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
        "partition.field.name": "value",
    },
}


def _as_published(name: str, store: Path) -> dict[str, str]:
    """The published config with its hdfs.url pointed at a local directory."""
    config = {k: str(v) for k, v in PUBLISHED[name].items()}
    config["hdfs.url"] = store.as_uri()
    return config


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_every_key_of_a_published_config_is_known(name: str, tmp_path: Path) -> None:
    config = _as_published(name, tmp_path)
    if name == "hdfs-parquet-field":
        config["partition.field.name"] = "region"  # the field of this test's records
    known = {*CONFIG.names(), *SINK_CONNECTOR_CONFIG.names()}
    assert unknown_keys(config, known, CONNECTOR_PASS_THROUGH) == []
    settings = parse(config)
    if "topics.dir" in config:
        assert settings.topics_dir == config["topics.dir"].strip("/")
        assert settings.logs_dir == config["logs.dir"].strip("/")


def _run(config: dict[str, str], topic: str, count: int) -> SparkParquetSinkTask:
    task = SparkParquetSinkTask()
    task.initialize(Context(config))
    task.start(config)
    task.put(records(range(count), topic=topic))
    return task


def test_absolute_topics_dir_is_under_the_store_as_confluent_builds_it(tmp_path: Path) -> None:
    """hdfs3-time-based as published: files land in <store>/words/1_sink/<topic>/<time>/,
    the commit intents in <store>/words/1_sink/logs."""
    config = _as_published("hdfs3-time-based", tmp_path)
    task = _run(config, "words-from-client", 6)
    try:
        files = sorted((tmp_path / "words/1_sink/words-from-client").rglob("*.parquet"))
        # Six records a second apart from 22:13:20 UTC: one 30-minute directory, two files of 3.
        assert [f.parent.name for f in files] == ["20231114_2200", "20231114_2200"]
        assert (tmp_path / "words/1_sink/logs").is_dir()
        assert not Path("/words").exists()
    finally:
        task.stop()


def test_field_partitioned_published_config_writes_under_its_absolute_topics_dir(
    tmp_path: Path,
) -> None:
    config = _as_published("hdfs-parquet-field", tmp_path)
    config["partition.field.name"] = "region"  # the published "value" names their field
    task = _run(config, "topic-example", 30)  # flush.size 10: ten of each region
    try:
        dirs = sorted(p.name for p in (tmp_path / "kafka/topics/topic-example").iterdir())
        assert dirs == ["region=apac", "region=eu", "region=us"]
        assert (tmp_path / "kafka/logs").is_dir()
    finally:
        task.stop()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/raw/kafka/topics", "raw/kafka/topics"),
        ("raw/kafka/topics/", "raw/kafka/topics"),
        ("/grid-wattage/", "grid-wattage"),
        ("topics", "topics"),
    ],
)
def test_topics_dir_forms(value: str, expected: str) -> None:
    settings = parse({"path": "lake", "topics.dir": value, "logs.dir": value})
    assert settings.topics_dir == expected
    assert settings.logs_dir == expected


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"topics.dir": ".."}, "topics.dir", "'..' would climb out of it"),
        ({"topics.dir": "/raw/../../etc"}, "topics.dir", "'..' would climb out of it"),
        ({"logs.dir": "/a/.."}, "logs.dir", "'..' would climb out of it"),
        ({"topics.dir": "/"}, "topics.dir", "a directory under the store"),
        ({"topics.dir": "a+b"}, "topics.dir", "without '+'"),
        (
            {"format.class": "io.confluent.connect.hdfs3.avro.AvroFormat"},
            "format.class",
            "this sink writes Parquet files only",
        ),
        ({"hive.integration": "true"}, "hive.integration", "does not create Hive tables"),
        (
            {"hdfs.authentication.kerberos": "true"},
            "hdfs.authentication.kerberos",
            "Kerberos is configured for Spark's session",
        ),
    ],
)
def test_refusals_name_the_key_and_why(props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse({"path": "lake", **props})
    assert caught.value.name == key
    assert reason in str(caught.value)


def test_switched_off_features_and_license_keys_are_accepted() -> None:
    settings = parse(
        {
            "path": "lake",
            "format.class": "io.confluent.connect.hdfs3.parquet.ParquetFormat",
            "hive.integration": "false",
            "hive.metastore.uris": "thrift://hive:9083",
            "hdfs.authentication.kerberos": "false",
            "hadoop.conf.dir": "/etc/hadoop/conf",
            "confluent.topic.bootstrap.servers": "kafka:9092",
            "confluent.topic.replication.factor": "1",
            "storage.class": "io.confluent.connect.hdfs3.storage.HdfsStorage",
            "partitioner.class": "io.confluent.connect.hdfs.partitioner.DefaultPartitioner",
        }
    )
    assert settings.partitioner == "default"
