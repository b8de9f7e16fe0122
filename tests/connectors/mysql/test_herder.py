"""MySqlCdcSource on a real StandaloneHerder over a FileLog (the task in a child
process, the default): the snapshot's Arrow batches and the stream's records reach the
topics through the JSON converter (geometry, decimals, schema changes, the history
topic), and a worker restart resumes with nothing lost or repeated."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sqlalchemy as sa

from log import FileLog
from tests.connectors.mysql.helpers import run
from tests.waiting import wait_until

pytestmark = [pytest.mark.mysql, pytest.mark.slow]


def values(log: FileLog, topic: str) -> list[Any]:
    if topic not in log.list_topics():
        return []
    out = []
    for partition in range(log.partition_count(topic)):
        offset = 0
        while batch := log.read(topic, partition, offset):
            out += [None if r.value is None else json.loads(r.value) for r in batch]
            offset = batch[-1].offset + 1
    return out


def test_worker_restart_resumes_with_nothing_lost_or_repeated(mysql_url, start_herder):
    u = sa.make_url(mysql_url)
    topic = f"srv.{u.database}.c"
    run(
        mysql_url,
        "CREATE TABLE c (id INT PRIMARY KEY, v INT NOT NULL, d DECIMAL(8,2), g POINT)",
        "INSERT INTO c VALUES "
        + ", ".join(f"({i}, 0, {i}.5, ST_GeomFromText('POINT({i} 1)'))" for i in range(1, 51)),
    )
    connector = {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": u.host,
        "database.port": str(u.port),
        "database.user": u.username,
        "database.password": u.password,
        "database.include.list": u.database,
        "topic.prefix": "srv",
        "schema.history.internal.kafka.topic": "history",
        "poll.interval.ms": "100",
    }
    worker = {"value.converter.schemas.enable": "false"}
    herder = start_herder(worker)
    herder.put_connector_config("cdc", connector, allow_replace=False)
    wait_until(lambda: len(values(herder.log, topic)) >= 50)
    run(mysql_url, *[f"UPDATE c SET v = v + 1 WHERE id <= {i}" for i in range(1, 11)])
    wait_until(lambda: len(values(herder.log, topic)) >= 50 + 55)
    herder.stop()
    herder.log.close()
    run(
        mysql_url,
        "DELETE FROM c WHERE id = 3",
        "ALTER TABLE c ADD COLUMN w VARCHAR(5)",
        "INSERT INTO c (id, v, w) VALUES (99, 7, 'new')",
        "UPDATE c SET v = v + 1 WHERE id = 1",
    )
    herder = start_herder(worker)
    wait_until(
        lambda: any(e and e["after"] and e["after"]["v"] == 11 for e in values(herder.log, topic))
    )
    events = [v for v in values(herder.log, topic) if v is not None]
    assert [e["op"] for e in events].count("r") == 50
    ones = [e["after"]["v"] for e in events if e["after"] and e["after"]["id"] == 1]
    assert ones == list(range(12))  # every version of row 1 once: nothing lost or repeated
    first = events[0]["after"]
    assert first["d"] == "AJY="  # 1.50: Connect Decimal, unscaled 150 big-endian, base64
    assert first["g"]["srid"] == 0 and first["g"]["wkb"]
    assert [e["after"]["w"] for e in events if e["after"] and e["after"]["id"] == 99] == ["new"]
    # the schema change and its history record: written in the same poll as the rows
    # after them, maybe a moment after those rows' topic
    for ddl_topic in ("srv", "history"):
        wait_until(
            lambda t=ddl_topic: any("ADD COLUMN w" in v["ddl"] for v in values(herder.log, t) if v)
        )
