"""Confluent's S3 sink keys as Confluent reads them: its published quickstart config
has no key this sink does not know, `topics.dir` takes the forms published configs
use (`/raw/kafka/topics`, `backup/`, and "" for no prefix), a `..` segment is still
refused, and keys asking for what this sink does not do (per-object encryption,
canned ACLs) are refused by name instead of being dropped."""

from __future__ import annotations

import pytest

from connect.api import ConfigError
from connect.herder.standalone import StandaloneHerder
from connect.worker.config import CONNECTOR_PASS_THROUGH, unknown_keys
from connect.worker.connector_config import SINK_CONNECTOR_CONFIG
from connectors.s3.config import SINK_CONFIG, LayoutSettings
from tests.connectors.s3.conftest import produce, schemaless, sink_config, wait_keys
from tests.s3 import Bucket

# confluentinc/kafka-connect-storage-cloud, kafka-connect-s3/config/quickstart-s3.properties,
# commit 87eb7d3909263411a482664bb167d1ebe6a9c7c4 (its keys and values).
QUICKSTART_S3 = {
    "name": "s3-sink",
    "connector.class": "io.confluent.connect.s3.S3SinkConnector",
    "tasks.max": "1",
    "topics": "s3_topic",
    "s3.region": "us-west-2",
    "s3.bucket.name": "confluent-kafka-connect-s3-testing",
    "s3.part.size": "5242880",
    "flush.size": "3",
    "storage.class": "io.confluent.connect.s3.storage.S3Storage",
    "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
    "schema.generator.class": "io.confluent.connect.storage.hive.schema.DefaultSchemaGenerator",
    "partitioner.class": "io.confluent.connect.storage.partitioner.DefaultPartitioner",
    "schema.compatibility": "NONE",
}

# https://gist.github.com/garystafford/77925a7531f159b3e17b6ed91e2e35c2 (a published
# S3 sink config; JSON numbers as the REST API turns them into strings).
GIST_S3 = {
    "connector.class": "io.confluent.connect.s3.S3SinkConnector",
    "tasks.max": "1",
    "topics.regex": "pagila.public.(.*)",
    "table.name.format": "${topic}",
    "s3.region": "us-east-1",
    "s3.bucket.name": "your-s3-bucket",
    "s3.part.size": "5242880",
    "flush.size": "100",
    "rotate.schedule.interval.ms": "60000",
    "timezone": "UTC",
    "storage.class": "io.confluent.connect.s3.storage.S3Storage",
    "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
    "partitioner.class": "io.confluent.connect.storage.partitioner.DefaultPartitioner",
    "schema.compatibility": "NONE",
}

_BASE = {
    "s3.bucket.name": "bucket",
    "flush.size": "3",
    "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
}


def test_the_published_quickstart_has_no_unknown_key() -> None:
    known = {*SINK_CONFIG.names(), *SINK_CONNECTOR_CONFIG.names()}
    assert unknown_keys(QUICKSTART_S3, known, CONNECTOR_PASS_THROUGH) == []
    SINK_CONFIG.parse(QUICKSTART_S3)


def test_a_published_config_warns_only_about_a_key_confluent_does_not_know_either() -> None:
    """table.name.format is the JDBC sink's key; Confluent's S3 sink ignores it too."""
    known = {*SINK_CONFIG.names(), *SINK_CONNECTOR_CONFIG.names()}
    assert unknown_keys(GIST_S3, known, CONNECTOR_PASS_THROUGH) == [("table.name.format", None)]
    SINK_CONFIG.parse(GIST_S3)
    known_with = {**QUICKSTART_S3, "retry.backoff.ms": "5000", "schema.cache.size": "1000"}
    assert unknown_keys(known_with, known, CONNECTOR_PASS_THROUGH) == []


@pytest.mark.parametrize(
    ("value", "prefix"),
    [("/raw/kafka/topics", "raw/kafka/topics"), ("backup/", "backup"), ("", "")],
)
def test_topics_dir_forms(value: str, prefix: str) -> None:
    assert LayoutSettings.of(SINK_CONFIG.parse({**_BASE, "topics.dir": value})).topics_dir == prefix


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"topics.dir": "a/../b"}, "topics.dir", "without '..' segments"),
        ({"topics.dir": "/.."}, "topics.dir", "without '..' segments"),
        ({"s3.ssea.name": "AES256"}, "s3.ssea.name", "bucket's default encryption"),
        ({"s3.sse.kms.key.id": "arn:aws:kms:k"}, "s3.sse.kms.key.id", "default encryption"),
        ({"s3.acl.canned": "bucket-owner-full-control"}, "s3.acl.canned", "bucket policy"),
    ],
)
def test_refusals_name_the_key_and_why(props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SINK_CONFIG.parse({**_BASE, **props})
    assert caught.value.name == key
    assert reason in str(caught.value)


def test_empty_encryption_and_acl_keys_are_accepted() -> None:
    SINK_CONFIG.parse({**_BASE, "s3.ssea.name": "", "s3.acl.canned": "", "s3.sse.kms.key.id": ""})


@pytest.mark.slow
def test_objects_land_under_an_absolute_topics_dir_and_at_the_root(
    herder: StandaloneHerder, s3_bucket: Bucket
) -> None:
    produce(herder.log, "orders", schemaless([{"id": i} for i in range(3)]))
    absolute = sink_config(s3_bucket, "orders", **{"topics.dir": "/raw/kafka/topics"})
    herder.put_connector_config("abs", absolute, allow_replace=False)
    root = sink_config(s3_bucket, "orders", **{"topics.dir": ""})
    herder.put_connector_config("root", root, allow_replace=False)
    keys = wait_keys(s3_bucket, 2)
    assert sorted(keys) == [
        "orders/partition=0/orders+0+0000000000.json",
        "raw/kafka/topics/orders/partition=0/orders+0+0000000000.json",
    ]
