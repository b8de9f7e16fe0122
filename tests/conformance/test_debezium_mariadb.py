"""Debezium's MariaDB connector as a peer: the real one, on the real Kafka Connect worker
(tests/kafka_connect.py), against the test MariaDB (tests/mysql.py, binlog on).

What MySqlCdcSource is measured against (bench/mysql_cdc_bench.py) and modelled on must
itself run here, or the comparison stands on nothing: this test starts Debezium 3.x's
`io.debezium.connector.mariadb.MariaDbConnector` (its own plugin folder,
.jvm/debezium-mariadb: Debezium's MySQL connector refuses MariaDB 10.11) with the
tutorial's keys, and reads back what it wrote to the broker:

1. the snapshot: one `r` event per row, `source.snapshot` first / last, the binlog
   file and position of the snapshot in `source`;
2. the stream: an insert, an update (before and after), a delete and its tombstone,
   each with its GTID (MariaDB's domain-server-sequence) and the server id;
3. DDL in the middle of the stream: an ALTER TABLE ADD COLUMN, as a schema change
   event on `<topic.prefix>` and in the schema history topic, and the next insert's
   `after` carrying the new column.
"""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any

import pytest

from bench.peers_cdc import Topics
from tests.conformance.test_differential_debezium import read_broker, stop_debezium
from tests.connectors.mysql.helpers import run
from tests.integration.conftest import JSON
from tests.kafka_connect import KafkaConnect
from tests.mysql import PASSWORD, SUPERUSER, MysqlServer
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.mysql]

MARIADB = "io.debezium.connector.mariadb.MariaDbConnector"


def debezium_config(
    server: MysqlServer, database: str, prefix: str, bootstrap: str
) -> dict[str, str]:
    """Debezium's tutorial config (register-mariadb.json) on the test server."""
    return {
        "connector.class": MARIADB,
        "tasks.max": "1",
        "database.hostname": "127.0.0.1",
        "database.port": str(server.port),
        "database.user": SUPERUSER,
        "database.password": PASSWORD,
        "database.server.id": "184054",
        "topic.prefix": prefix,
        "database.include.list": database,
        "schema.history.internal.kafka.bootstrap.servers": bootstrap,
        "schema.history.internal.kafka.topic": f"schema-changes.{prefix}",
        "key.converter": JSON,
        "key.converter.schemas.enable": "false",
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1",
    }


def values(records: list[Any]) -> list[dict[str, Any] | None]:
    return [None if v is None else json.loads(v) for _, v in records]


def ddl_in(topics: Topics, topic: str, statement: str) -> list[dict[str, Any]] | None:
    """The records of a DDL topic once one of them holds `statement`."""
    records = [json.loads(m.value()) for m in topics.read(topic)]
    return records if any(statement in r.get("ddl", "") for r in records) else None


def test_debezium_mariadb_connector_snapshots_streams_and_follows_ddl(
    mysql_server: MysqlServer, mysql_url: str, kafka_connect: KafkaConnect
) -> None:
    database = mysql_url.rsplit("/", 1)[1].split("?")[0]
    prefix = f"dbzmaria{secrets.token_hex(3)}"
    topic = f"{prefix}.{database}.items"
    run(
        mysql_url,
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, "
        "price DECIMAL(8,2), qty INT UNSIGNED)",
        "INSERT INTO items VALUES (1, 'one', 1.50, 10), (2, 'two', NULL, 20)",
    )
    name = f"debezium-{prefix}"
    config = debezium_config(mysql_server, database, prefix, kafka_connect.broker.bootstrap)
    created = kafka_connect.request("PUT", f"/connectors/{name}/config", config)
    assert created.status_code == 201, created.text
    try:
        # Step 1: the snapshot.
        snap = values(read_broker(kafka_connect.broker, topic, 2, 90))
        assert [(e["op"], e["after"]["id"], e["source"]["snapshot"]) for e in snap] == [
            ("r", 1, "first"),
            ("r", 2, "last"),
        ]
        assert snap[0]["source"]["connector"] == "mariadb"
        assert snap[0]["source"]["file"].startswith("mysql-bin.")
        assert snap[0]["after"]["qty"] == 10 and snap[1]["after"]["price"] is None
        # Step 2: the stream.
        run(
            mysql_url,
            "INSERT INTO items VALUES (3, 'three', 3.25, 4294967295)",
            "UPDATE items SET name = 'uno' WHERE id = 1",
            "DELETE FROM items WHERE id = 2",
        )
        # Step 3: DDL in the stream, then a row of the new shape.
        run(
            mysql_url,
            "ALTER TABLE items ADD COLUMN note VARCHAR(10) DEFAULT 'n/a'",
            "INSERT INTO items (id, name, note) VALUES (4, 'four', 'new')",
        )
        try:
            events = values(read_broker(kafka_connect.broker, topic, 7, 60))
        except AssertionError as missing:
            status = kafka_connect.request("GET", f"/connectors/{name}/status").text
            raise AssertionError(f"{missing}; Debezium's status: {status[:3000]}") from None
        topics = Topics(kafka_connect.broker.bootstrap)
        try:
            history = wait_until(
                lambda: ddl_in(topics, f"schema-changes.{prefix}", "ALTER TABLE"), 30,
                "the ALTER TABLE in the schema history topic",
            )
            changes = wait_until(
                lambda: ddl_in(topics, prefix, "ALTER TABLE"), 30,
                "the ALTER TABLE on the schema change topic",
            )
        finally:
            topics.close()
    finally:
        stop_debezium(kafka_connect, name)

    stream = events[2:]
    assert [e and e["op"] for e in stream] == ["c", "u", "d", None, "c"]
    insert, update, delete, _, after_ddl = stream
    price = base64.b64encode((325).to_bytes(2, "big")).decode()  # Decimal 3.25, unscaled
    assert insert["after"] == {"id": 3, "name": "three", "price": price, "qty": 4294967295}
    assert (update["before"]["name"], update["after"]["name"]) == ("one", "uno")
    assert delete["before"]["id"] == 2 and delete["after"] is None
    for event in (insert, update, delete, after_ddl):
        source = event["source"]
        assert source["snapshot"] == "false" and source["server_id"] == 1
        assert source["gtid"].startswith("0-1-"), source  # domain 0, server 1
    assert after_ddl["after"] == {
        "id": 4, "name": "four", "price": None, "qty": None, "note": "new"
    }
    assert any("CREATE TABLE" in h["ddl"] for h in history)  # the snapshot's
    alter = [c for c in changes if c["ddl"].startswith("ALTER TABLE")]
    assert [c["databaseName"] for c in alter] == [database]
    assert [t["table"]["columns"][-1]["name"] for t in alter[0]["tableChanges"]] == ["note"]
