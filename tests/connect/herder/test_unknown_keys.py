"""Unknown config keys: which are warned about, with which suggestion, and that every
config the project ships is clean (a warning there would teach users to ignore them)."""

from __future__ import annotations

import json

import pytest

from connect.herder.validation import unknown_connector_keys, validate_connector_config
from connect.plugins import Plugins
from connect.standalone import load_connector_config
from connect.worker.config import WORKER_CONFIG, WORKER_PASS_THROUGH, unknown_keys
from tests.conftest import ROOT

SHIPPED = sorted((ROOT / "configs").glob("*.json"))


def test_unknown_worker_keys_and_what_they_resemble() -> None:
    supplied = {
        "log.dir": "data",
        "offset.flush.interval": "100",  # the unit dropped
        "sesion.timeout.ms": "100",  # a letter dropped
        "value.converter.schemas.enable": "false",  # the converter's own
        "consumer.max.poll.records": "10",  # the client's own
        "config.providers.file.class": "FileConfigProvider",
        "totally.different": "x",
    }
    assert unknown_keys(supplied, WORKER_CONFIG.names(), WORKER_PASS_THROUGH) == [
        ("offset.flush.interval", "offset.flush.interval.ms"),
        ("sesion.timeout.ms", "session.timeout.ms"),
        ("totally.different", None),
    ]


def test_a_known_name_ending_in_a_star_declares_a_family_of_keys() -> None:
    supplied = ["iceberg.catalog.uri", "iceberg.catalog.s3.endpoint", "iceberg.catalg.uri"]
    assert unknown_keys(supplied, ["iceberg.catalog", "iceberg.catalog.*"]) == [
        ("iceberg.catalg.uri", "iceberg.catalog.*")  # the family suggested
    ]


def test_connector_keys_of_transforms_predicates_and_clients_are_known() -> None:
    config = {
        "name": "src",
        "connector.class": "FileStreamSource",
        "file": "in.txt",
        "topic": "t",
        "transforms": "a",
        "transforms.a.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.a.static.field": "f",
        "transforms.a.whatever": "x",
        "errors.tolerance": "all",
        "producer.override.linger.ms": "5",
        "key.converter.schemas.enable": "false",
        "topic.creation.default.partitions": "1",
        "tasks.maxx": "1",
    }
    infos = validate_connector_config(Plugins(), config)
    assert unknown_connector_keys(infos, config) == [
        "connector src (FileStreamSourceConnector): the configuration 'tasks.maxx' was "
        "supplied but isn't a known config (ignored); did you mean 'tasks.max'?"
    ]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_configs_have_no_unknown_keys(path) -> None:
    data = json.loads(path.read_text())
    if "connector.class" in data or "config" in data:
        _, config = load_connector_config(path)
        assert unknown_connector_keys(validate_connector_config(Plugins(), config), config) == []
    else:
        assert unknown_keys(data, WORKER_CONFIG.names(), WORKER_PASS_THROUGH) == []
