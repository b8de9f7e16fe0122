"""PostgresCdcSource takes Debezium 1.x's key names (database.server.name, schema.whitelist,
table.whitelist, ...) and Debezium 2's schema lists, as the published tutorial configs
use them (debezium-examples' tutorial/register-postgres.json runs end to end in
tests/conformance)."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import ConfigError
from connect.worker.config import CONNECTOR_PASS_THROUGH, unknown_keys
from connect.worker.connector_config import SOURCE_CONNECTOR_CONFIG
from connectors.postgres.config import CONFIG, parse_config
from connectors.postgres.source import PostgresCdcSourceConnector, _Filter

BASE = {"database.hostname": "127.0.0.1", "database.dbname": "postgres"}


def captured(**keys: str) -> set[str]:
    cfg = parse_config({**BASE, "topic.prefix": "p", **keys})
    selects = _Filter(cfg["table.include.list"], cfg["table.exclude.list"])
    tables = ["inventory.customers", "inventory.orders", "inventory2.customers", "public.other"]
    return {t for t in tables if selects(*t.split("."))}


def test_database_server_name_is_the_topic_prefix() -> None:
    cfg = parse_config({**BASE, "database.server.name": "dbserver1"})
    assert cfg["topic.prefix"] == "dbserver1"
    assert parse_config({**BASE, "topic.prefix": "t"})["topic.prefix"] == "t"


def test_no_prefix_by_either_name_is_refused_naming_topic_prefix() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(BASE)
    assert refused.value.name == "topic.prefix"
    assert "database.server.name" in str(refused.value)
    results: Any = PostgresCdcSourceConnector().validate(BASE)
    errors = {r.name: r.errors for r in results if r.errors}
    assert list(errors) == ["topic.prefix"]
    with pytest.raises(ConfigError, match="not both"):
        parse_config({**BASE, "topic.prefix": "a", "database.server.name": "b"})


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({}, {"inventory.customers", "inventory.orders", "inventory2.customers", "public.other"}),
        ({"schema.whitelist": "inventory"}, {"inventory.customers", "inventory.orders"}),
        ({"schema.include.list": "inventory"}, {"inventory.customers", "inventory.orders"}),
        (
            {"schema.include.list": "inv.*"},
            {"inventory.customers", "inventory.orders", "inventory2.customers"},
        ),
        (
            {"schema.blacklist": "public"},
            {"inventory.customers", "inventory.orders", "inventory2.customers"},
        ),
        (
            {"schema.include.list": "inventory.*", "table.include.list": r".*\.customers"},
            {"inventory.customers", "inventory2.customers"},
        ),
        (
            {"schema.include.list": "inventory", "table.exclude.list": r".*\.orders"},
            {"inventory.customers"},
        ),
        (
            {"schema.exclude.list": "public", "table.whitelist": r".*\.customers,public\..*"},
            {"inventory.customers", "inventory2.customers"},
        ),
        (
            {"table.blacklist": r"inventory\.orders"},
            {"inventory.customers", "inventory2.customers", "public.other"},
        ),
        # Debezium's selectors ignore case: a config spelling a folded name otherwise.
        ({"table.include.list": r"Inventory\.Customers"}, {"inventory.customers"}),
        ({"schema.include.list": "INVENTORY"}, {"inventory.customers", "inventory.orders"}),
    ],
)
def test_schema_and_table_lists_together(keys: dict[str, str], expected: set[str]) -> None:
    """A table is captured when its schema passes the schema lists and its
    schema.table the table lists, whichever Debezium names them by."""
    assert captured(**keys) == expected


def test_a_list_and_its_former_name_together_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"schema\.include\.list or its former name"):
        parse_config(
            {**BASE, "topic.prefix": "p", "schema.include.list": "a", "schema.whitelist": "b"}
        )


def test_plugin_name_of_published_configs_is_known() -> None:
    """debezium-examples' configs name plugin.name (pgoutput; decoderbufs in 1.x ones):
    a key of the connector, not an unknown one warned about; changes are read with
    pgoutput either way. A value Debezium does not know is refused by name."""
    known = {*CONFIG.names(), *SOURCE_CONNECTOR_CONFIG.names()}
    for plugin in ("pgoutput", "decoderbufs", "wal2json"):
        config = {**BASE, "topic.prefix": "p", "plugin.name": plugin}
        assert unknown_keys(config, known, CONNECTOR_PASS_THROUGH) == []
        assert parse_config(config)["plugin.name"] == plugin
    with pytest.raises(ConfigError) as refused:
        parse_config({**BASE, "topic.prefix": "p", "plugin.name": "test_decoding"})
    assert refused.value.name == "plugin.name"
