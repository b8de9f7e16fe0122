"""A published Debezium MySQL connector config runs with only its host and credentials
changed: debezium/debezium-examples, tutorial/register-mysql.json (commit 9874287),
the config of Debezium's tutorial, on the tutorial's `inventory` database."""

from __future__ import annotations

import importlib

import pytest
import sqlalchemy as sa

from connect.standalone import load_connector_config
from connectors import ALIASES
from tests.conftest import ROOT
from tests.connectors.mysql.helpers import Driver, run
from tests.connectors.postgres.helpers import events
from tests.mysql import MysqlServer

pytestmark = pytest.mark.mysql

REGISTER_MYSQL = {
    "name": "inventory-connector",
    "config": {
        "connector.class": "io.debezium.connector.mysql.MySqlConnector",
        "tasks.max": "1",
        "database.hostname": "mysql",
        "database.port": "3306",
        "database.user": "debezium",
        "database.password": "dbz",
        "database.server.id": "184054",
        "database.server.name": "dbserver1",
        "database.include.list": "inventory",
        "database.history.kafka.bootstrap.servers": "kafka:9092",
        "database.history.kafka.topic": "schema-changes.inventory",
    },
}


def test_the_tutorial_config_runs(mysql_server: MysqlServer) -> None:
    mysql_server.execute("DROP DATABASE IF EXISTS inventory", "CREATE DATABASE inventory")
    url = mysql_server.url("inventory")
    try:
        run(
            url,
            "CREATE TABLE customers (id INT AUTO_INCREMENT PRIMARY KEY,"
            " first_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE)",
            "INSERT INTO customers VALUES (1001, 'Sally', 'sally.thomas@acme.com')",
        )
        u = sa.make_url(url)
        props = dict(REGISTER_MYSQL["config"])
        props.update(
            {
                "database.hostname": u.host,
                "database.port": str(u.port),
                "database.user": u.username,
                "database.password": u.password,
            }
        )
        module, cls = ALIASES[props["connector.class"]].split(":")
        connector = getattr(importlib.import_module(module), cls)()
        assert not [r for r in connector.validate(props) if r.errors]
        connector.start(props)
        [task_props] = connector.task_configs(1)
        d = Driver(task_props)
        try:
            d.poll_count(1)
            run(url, "UPDATE customers SET first_name = 'Anne Marie' WHERE id = 1001")
            d.poll_until(
                lambda r: any(
                    x.topic == "dbserver1.inventory.customers" and x.value.get("op") == "u"
                    for x in r
                )
            )
        finally:
            d.stop()
        rows = [r for r in d.records if r.topic == "dbserver1.inventory.customers"]
        got = events(rows)
        assert [(e[1], e[2]) for e in got] == [("r", {"id": 1001}), ("u", {"id": 1001})]
        assert got[1][4]["first_name"] == "Anne Marie"
        # the snapshot's DDL, before the reads: on <topic.prefix> (include.schema.changes
        # is on by default) and in the history topic (1.x's database.history.kafka.topic)
        changes = [r for r in d.records if r.topic == "dbserver1"]
        history = [r for r in d.records if r.topic == "schema-changes.inventory"]
        assert d.records.index(changes[0]) < d.records.index(rows[0])
        assert [r.value.get("ddl").split("(")[0] for r in changes] == ["CREATE TABLE `customers` "]
        assert changes[0].value.get("source").get("snapshot") == "true"
        assert [r.value["ddl"] for r in history] == [changes[0].value.get("ddl")]
    finally:
        mysql_server.drop_database("inventory")


def test_the_shipped_config_runs(mysql_server: MysqlServer) -> None:
    """configs/connect-mysql-cdc-source.json, hosts and credentials changed only."""
    _, shipped = load_connector_config(ROOT / "configs" / "connect-mysql-cdc-source.json")
    mysql_server.execute("DROP DATABASE IF EXISTS shop", "CREATE DATABASE shop")
    url = mysql_server.url("shop")
    try:
        run(
            url,
            "CREATE TABLE orders (id INT PRIMARY KEY, total DECIMAL(10,2) NOT NULL)",
            "INSERT INTO orders VALUES (1, 9.50), (2, 20.00)",
        )
        u = sa.make_url(url)
        props = {k: str(v) for k, v in shipped.items()}
        props.update(
            {
                "database.hostname": u.host,
                "database.port": str(u.port),
                "database.user": u.username,
                "database.password": u.password,
            }
        )
        module, cls = ALIASES[props["connector.class"]].split(":")
        connector = getattr(importlib.import_module(module), cls)()
        assert not [r for r in connector.validate(props) if r.errors]
        connector.start(props)
        [task_props] = connector.task_configs(1)
        d = Driver(task_props)
        try:
            d.poll_count(2)
            run(url, "DELETE FROM orders WHERE id = 1")
            d.poll_until(
                lambda r: any(x.topic == "shop.shop.orders" and x.value is None for x in r)
            )
        finally:
            d.stop()
        rows = [r for r in d.records if r.topic == "shop.shop.orders"]
        got = [(e[1], e[2]) for e in events([r for r in rows if r.value is not None])]
        assert got == [("r", {"id": 1}), ("r", {"id": 2}), ("d", {"id": 1})]
        assert rows[-1].value is None  # tombstones.on.delete
        assert [r.value["ddl"].split("(")[0] for r in d.records if r.topic == "schema-changes.shop"]
    finally:
        mysql_server.drop_database("shop")
