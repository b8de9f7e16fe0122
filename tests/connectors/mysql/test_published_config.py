"""A published Debezium MySQL connector config runs with only its host and credentials
changed: debezium/debezium-examples, tutorial/register-mysql.json (commit 9874287),
the config of Debezium's tutorial, on the tutorial's `inventory` database."""

from __future__ import annotations

import importlib

import pytest
import sqlalchemy as sa

from connectors import ALIASES
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
