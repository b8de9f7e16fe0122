"""JdbcSink in a real StandaloneHerder over a real FileLog: JSON records with schemas on
two partitions go through the worker (task in its own process) into SQLite — upserts,
updates, tombstones — across a restart of the worker, and the table ends exact."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connect.herder.standalone import StandaloneHerder
from log import FileLog
from tests.waiting import wait_until

JSON = "org.apache.kafka.connect.json.JsonConverter"
KEY_SCHEMA = {"type": "int64", "optional": False}
VALUE_SCHEMA = {
    "type": "struct",
    "name": "shop.order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "customer", "type": "string", "optional": True},
        {"field": "qty", "type": "int32", "optional": False},
        {
            "field": "updated_at",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
            "optional": True,
        },
    ],
}


@pytest.fixture
def start_herder(start_herder: Callable[..., StandaloneHerder]) -> Callable[[], StandaloneHerder]:
    """The shared factory, with JSON keys and values."""
    return functools.partial(start_herder, {"key.converter": JSON, "value.converter": JSON})


def produce(log: FileLog, changes: list[tuple[int, dict[str, Any] | None]]) -> None:
    """Append keyed JSON records (None: a tombstone) to `orders`, by key parity."""
    for partition in (0, 1):
        mine = [(k, v) for k, v in changes if k % 2 == partition]
        if not mine:
            continue
        keys = [json.dumps({"schema": KEY_SCHEMA, "payload": k}).encode() for k, _ in mine]
        values = [
            None if v is None else json.dumps({"schema": VALUE_SCHEMA, "payload": v}).encode()
            for _, v in mine
        ]
        log.append("orders", partition, values, keys=keys)


def table_rows(url: str) -> list[tuple] | None:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("orders"):
                return None
            return [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM orders ORDER BY id")]
    finally:
        engine.dispose()


@pytest.mark.slow
def test_jdbc_sink_on_the_standalone_herder_is_exact_across_a_restart(
    start_herder: Callable[[], StandaloneHerder], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'sink.db'}"
    config = {
        "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        "topics": "orders",
        "connection.url": url,
        "insert.mode": "upsert",
        "pk.mode": "record_key",
        "pk.fields": "id",
        "delete.enabled": "true",
        "auto.create": "true",
    }
    model: dict[int, tuple] = {}

    def change(key: int, customer: str | None, qty: int) -> tuple[int, dict[str, Any]]:
        ts = 1_700_000_000_000 + qty
        model[key] = (key, customer, qty, ts)
        return key, {"id": key, "customer": customer, "qty": qty, "updated_at": ts}

    def delete(key: int) -> tuple[int, None]:
        model.pop(key, None)
        return key, None

    herder = start_herder()
    herder.log.create_topic("orders", 2)
    produce(herder.log, [change(k, f"c{k}", k) for k in range(200)])
    herder.put_connector_config("jdbc", config, allow_replace=False)

    def as_model(rows: list[tuple] | None) -> dict[int, tuple] | None:
        if rows is None:
            return None
        # SQLite gives the Timestamp column back as text: compare instants as ms.
        return {r[0]: (r[0], r[1], r[2], _ms(r[3])) for r in rows}

    wait_until(lambda: as_model(table_rows(url)) == model)
    assert herder.connector_status("jdbc").tasks[0].state == "RUNNING"
    herder.stop()  # a clean stop commits the consumed offsets

    herder = start_herder()
    produce(
        herder.log,
        [change(k, None, 1000 + k) for k in range(0, 200, 3)]
        + [delete(k) for k in range(0, 200, 5)]
        + [change(k, "back", 7) for k in range(0, 50, 10)]
        + [change(k, f"new{k}", k) for k in range(200, 260)],
    )
    wait_until(lambda: as_model(table_rows(url)) == model)
    assert herder.connector_status("jdbc").tasks[0].state == "RUNNING"


def _ms(value: Any) -> int | None:
    import datetime as dt

    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return int(value.replace(tzinfo=dt.UTC).timestamp() * 1000)
