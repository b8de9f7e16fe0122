"""JdbcSink configs: Confluent's keys and defaults, bad configs refused naming the key
(by the connector's start, the task's start and the REST validate endpoint), the
aliases, and the shipped config."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import ConfigError
from connect.herder.validation import validate_connector_config
from connect.plugins import Plugins
from connect.standalone import load_connector_config
from connectors import ALIASES
from connectors.jdbc.sink import JdbcSinkConnector, JdbcSinkTask
from connectors.jdbc.sink_config import SinkSettings
from tests.conftest import ROOT

BASE = {"connection.url": "sqlite:///x.db"}


def test_defaults_are_confluents() -> None:
    s = SinkSettings.parse(BASE)
    assert (s.insert_mode, s.pk_mode, s.pk_fields, s.fields_include) == ("insert", "none", (), None)
    assert (s.auto_create, s.auto_evolve, s.delete_enabled) == (False, False, False)
    assert (s.batch_size, s.table_name_format, str(s.db_timezone)) == (3000, "${topic}", "UTC")
    assert (s.max_retries, s.retry_backoff_ms, s.quote_identifiers) == (10, 3000, True)
    assert s.replace_null_with_default is True


def test_credentials_are_kept_and_the_password_is_hidden() -> None:
    s = SinkSettings.parse({**BASE, "connection.user": "u", "connection.password": "secret"})
    assert (s.user, s.password) == ("u", "secret")
    values = {
        v.name: v for v in JdbcSinkConnector().validate({**BASE, "connection.password": "secret"})
    }
    assert values["connection.password"].value == "[hidden]"


BAD: list[tuple[dict[str, Any], str]] = [
    ({}, "connection.url"),
    ({"connection.url": "not a url"}, "connection.url"),
    ({"connection.url": "nosuchdb://host/db"}, "connection.url"),
    ({"insert.mode": "merge"}, "insert.mode"),
    ({"insert.mode": "upsert"}, "insert.mode"),  # no primary key to upsert by
    ({"insert.mode": "update", "pk.mode": "none"}, "insert.mode"),
    ({"pk.mode": "auto"}, "pk.mode"),
    ({"pk.fields": "id"}, "pk.fields"),  # pk.mode=none takes none
    ({"pk.mode": "kafka", "pk.fields": "a,b"}, "pk.fields"),
    ({"pk.mode": "record_value", "pk.fields": "a,a"}, "pk.fields"),
    ({"delete.enabled": "true", "pk.mode": "record_value"}, "delete.enabled"),
    ({"delete.enabled": "maybe"}, "delete.enabled"),
    ({"batch.size": "0"}, "batch.size"),
    ({"table.name.format": "a.b.${topic}"}, "table.name.format"),
    ({"table.name.format": "x;drop table y"}, "table.name.format"),
    ({"table.name.format": '"${topic}"'}, "table.name.format"),
    ({"db.timezone": "Mars/Olympus"}, "db.timezone"),
    ({"max.retries": "-1"}, "max.retries"),
    ({"quote.sql.identifiers": "sometimes"}, "quote.sql.identifiers"),
    ({"fields.whitelist": "a", "fields.include.list": "b"}, "fields.include.list"),
]


@pytest.mark.parametrize(("extra", "key"), BAD, ids=[f"{k}-{i}" for i, (_, k) in enumerate(BAD)])
def test_bad_configs_are_refused_naming_the_key(extra: dict[str, Any], key: str) -> None:
    props = {**(BASE if "connection.url" not in extra and extra else {}), **extra}
    if not extra:
        props = {}
    with pytest.raises(ConfigError) as refused:
        JdbcSinkConnector().start(props)
    assert refused.value.name == key
    assert key in str(refused.value)
    with pytest.raises(ConfigError):
        JdbcSinkTask().start(props)
    errors = {v.name: v.errors for v in JdbcSinkConnector().validate(props)}
    assert errors[key], errors
    assert [name for name, e in errors.items() if e] == [key]


def test_good_configs_pass_and_tasks_share_the_config() -> None:
    props = {
        **BASE,
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "pk.fields": "id",
        "delete.enabled": "true",
        "table.name.format": "archive.kafka_${topic}",
        "fields.whitelist": "a,b",
        "fields.include.list": "b,a",
        "db.timezone": "Europe/Paris",
        "quote.sql.identifiers": "never",
    }
    connector = JdbcSinkConnector()
    connector.start(props)
    assert connector.task_configs(3) == [props] * 3
    assert not any(v.errors for v in connector.validate(props))
    assert connector.task_class() is JdbcSinkTask


def test_aliases_and_the_shipped_config() -> None:
    for alias in ("JdbcSink", "JdbcSinkConnector", "io.confluent.connect.jdbc.JdbcSinkConnector"):
        assert ALIASES[alias] == "connectors.jdbc.sink:JdbcSinkConnector"
    name, config = load_connector_config(ROOT / "configs" / "connect-jdbc-sink.json")
    assert name == "jdbc-sink"
    infos = validate_connector_config(Plugins(), config)
    assert infos["error_count"] == 0
    assert infos["name"] == "connectors.jdbc.sink.JdbcSinkConnector"
