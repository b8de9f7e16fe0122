"""The snapshot's columnar chunks (SourceBatches) land in the log exactly as the
record-by-record snapshot's events do: same partitions, keys, values and offsets."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from connect.api.batches import SourceBatch
from connectors.postgres import snapshot
from tests.connectors.postgres.helpers import run
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres]
ROWS = 2500
TABLE = (
    "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, qty int NOT NULL, "
    "price float8 NOT NULL, amount numeric(12,2) NOT NULL, region text, "
    "created_at timestamptz NOT NULL, paid boolean NOT NULL, day date)"
)
FILL = (
    "INSERT INTO orders SELECT n, 'customer-' || (n % 50) || ' ünï', n % 9, n * 0.25, "
    "round(n / 7.0, 2) - 100, CASE WHEN n % 11 = 0 THEN NULL ELSE 'region-' || (n % 4) END, "
    "timestamptz '2024-01-01' + n * interval '1.5 second', n % 2 = 0, "
    "CASE WHEN n % 5 = 0 THEN NULL ELSE date '2024-01-01' + n END "
    f"FROM generate_series(1, {ROWS}) n"
)
AVRO = {
    "value.converter": "io.confluent.connect.avro.AvroConverter",
    "value.converter.schema.registry.url": "embedded",
}
JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter"}
UNWRAP = {
    "transforms": "unwrap",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
}


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the SourceBatches the snapshot emits (tasks run as threads)."""
    made: list[int] = []
    original = snapshot.SnapshotPhase._batch

    def counting(self: Any, table: Any, rows: Any) -> list[Any]:
        out = original(self, table, rows)
        made.extend(len(b) for b in out if isinstance(b, SourceBatch))
        return out

    monkeypatch.setattr(snapshot.SnapshotPhase, "_batch", counting)
    return made


def _snapshot(
    herder: Any, url: str, name: str, extra: dict[str, str]
) -> dict[int, list[tuple[Any, Any]]]:
    topic = f"{name}.public.orders"
    herder.put_connector_config(
        name,
        {
            "connector.class": "PostgresCdcSource",
            "connection.url": url,
            "topic.prefix": name,
            "slot.name": name,
            "snapshot.mode": "initial_only",
            "max.batch.size": "700",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "topic.creation.default.partitions": "3",
            **extra,
        },
        allow_replace=False,
    )
    log = herder.log

    def count() -> int:
        if topic not in log.list_topics():
            return 0
        return sum(log.latest_offset(topic, p) for p in range(3))

    wait_until(lambda: count() >= ROWS)
    wait_until(
        lambda: (herder.offsets.get(name, {"server": name}) or {}).get("last_snapshot_record")
    )
    herder.delete_connector(name)
    out: dict[int, list[tuple[Any, Any]]] = {}
    for p in range(3):
        offset, pairs = 0, out.setdefault(p, [])
        while batch := log.read(topic, p, offset):
            pairs += [(r.key, r.value) for r in batch]
            offset = batch[-1].offset + 1
    assert sum(map(len, out.values())) == ROWS
    return out


def _without_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "CopyArrowParser", lambda table: SimpleNamespace(supported=False))


def _herder(start_herder: Callable[..., Any]) -> Any:
    return start_herder({"task.isolation": "thread"})


@pytest.mark.parametrize("values", [JSON, AVRO], ids=["json", "avro"])
def test_unwrapped_rows_are_byte_for_byte_the_record_paths(
    postgres_url, start_herder, monkeypatch, batches, batch_fallbacks, values
) -> None:
    run(postgres_url, TABLE, FILL)
    herder = _herder(start_herder)
    columnar = _snapshot(herder, postgres_url, "cols", {**values, **UNWRAP})
    # each chunk's newest row is held back, and the table's first row is a record of
    # its own (source.snapshot "first")
    assert sum(batches) == ROWS - len(batches) - 1
    assert sum(map(len, columnar.values())) == ROWS
    assert all(columnar[p] for p in range(3))
    assert not batch_fallbacks  # unwrapped, converted and partitioned as columns
    _without_columns(monkeypatch)
    batches.clear()
    records = _snapshot(herder, postgres_url, "recs", {**values, **UNWRAP})
    assert not batches

    # The schemas are named after each connector's topic prefix: JSON's carry the
    # name, Avro's header the id of each connector's own registered schema.
    def same(out: dict[int, list[tuple[Any, Any]]]) -> dict[int, list[tuple[Any, Any]]]:
        if values is AVRO:
            return {p: [(k, v[5:]) for k, v in pairs] for p, pairs in out.items()}
        return {
            p: [(k, v.replace(b'"cols.', b'"recs.')) for k, v in pairs] for p, pairs in out.items()
        }

    assert same(columnar) == same(records)


def test_envelopes_match_the_record_paths_but_for_their_times(
    postgres_url, start_herder, monkeypatch, batches
) -> None:
    run(postgres_url, TABLE, FILL, r"UPDATE orders SET region = 'tab\there' WHERE id = 1000")
    herder = _herder(start_herder)
    columnar = _snapshot(herder, postgres_url, "cols", JSON)
    # The chunk with an escaped tab goes record by record; the others as columns.
    assert 0 < sum(batches) < ROWS - 1
    _without_columns(monkeypatch)
    records = _snapshot(herder, postgres_url, "recs", JSON)

    def timeless(out: dict[int, list[tuple[Any, Any]]]) -> dict[int, list[Any]]:
        events: dict[int, list[Any]] = {}
        for p, pairs in out.items():
            for key, value in pairs:
                if value is None:
                    events.setdefault(p, []).append(key)
                    continue
                event = json.loads(value)
                payload = event["payload"]
                for stamp in ("ts_ms", "ts_us", "ts_ns"):
                    payload.pop(stamp)
                for varying in ("ts_ms", "ts_us", "ts_ns", "lsn", "txId"):  # the two slots' own
                    payload["source"].pop(varying)
                payload["source"]["name"] = "server"
                event["schema"] = (
                    json.dumps(event["schema"]).replace("cols.", "").replace("recs.", "")
                )
                events.setdefault(p, []).append((key, event))
        return events

    assert timeless(columnar) == timeless(records)
