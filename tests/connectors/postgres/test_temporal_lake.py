"""PostgreSQL's temporal columns end to end, per `time.precision.mode`: the envelope
values a real StandaloneHerder's PostgresCdcSource writes to the log are Debezium's
(names, types, precisions), and SparkParquetSink lands the same events with dates and
timestamps as Parquet dates and timestamps — a snapshot row (read as Arrow columns
from COPY) and a streamed row (record by record) alike."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from connect.api.batches import SourceBatch
from connectors.postgres import snapshot
from log import FileLog
from tests.connectors.postgres.helpers import run
from tests.waiting import wait_until

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
UTC = dt.UTC
TABLES = (
    # `t` has only columns CopyArrowParser reads, so its snapshot goes as Arrow columns;
    # timetz has no columnar reading, so it has a table of its own (record by record).
    "CREATE TABLE t (id int PRIMARY KEY, day date, clock time, clock3 time(3), "
    "local timestamp, local3 timestamp(3), at timestamptz, at3 timestamptz(3))",
    "CREATE TABLE tz (id int PRIMARY KEY, clocktz timetz)",
)
ROW = (
    "'2016-11-04', '13:51:30.123456', '13:51:30.123', '2016-11-04 13:51:30.123456', "
    "'2016-11-04 13:51:30.123', '2016-11-04 13:51:30.123456+02', '2016-11-04 13:51:30.1+02'"
)
DAY = 17109  # 2016-11-04 in days since the epoch
CLOCK_US = (13 * 3600 + 51 * 60 + 30) * 1_000_000 + 123456
LOCAL_US = 1478267490123456  # 2016-11-04T13:51:30.123456, the wall clock as if UTC
DBZ = "io.debezium.time."
CONNECT = "org.apache.kafka.connect.data."
# field -> (schema name, value in the log's JSON), per time.precision.mode
ADAPTIVE = {
    "day": (DBZ + "Date", DAY),
    "clock": (DBZ + "MicroTime", CLOCK_US),
    "clock3": (DBZ + "Time", CLOCK_US // 1000),
    "local": (DBZ + "MicroTimestamp", LOCAL_US),
    "local3": (DBZ + "Timestamp", LOCAL_US // 1000),
    "at": (DBZ + "ZonedTimestamp", "2016-11-04T11:51:30.123456Z"),
    "at3": (DBZ + "ZonedTimestamp", "2016-11-04T11:51:30.100Z"),
}
EXPECTED = {
    "adaptive": ADAPTIVE,
    "adaptive_time_microseconds": {**ADAPTIVE, "clock3": (DBZ + "MicroTime", CLOCK_US - 456)},
    "connect": {
        **ADAPTIVE,
        "day": (CONNECT + "Date", DAY),
        "clock": (CONNECT + "Time", CLOCK_US // 1000),
        "clock3": (CONNECT + "Time", CLOCK_US // 1000),
        "local": (CONNECT + "Timestamp", LOCAL_US // 1000),
        "local3": (CONNECT + "Timestamp", LOCAL_US // 1000),
    },
}
AT = dt.datetime(2016, 11, 4, 13, 51, 30, 123456, tzinfo=UTC)
# What the lake holds for row images of `t`, per mode (times of day stay numbers).
LAKE = {
    mode: {
        "day": (pa.date32(), dt.date(2016, 11, 4)),
        "clock": (pa.int64(), CLOCK_US)
        if mode != "connect"
        else (pa.time32("ms"), dt.time(13, 51, 30, 123000)),
        "clock3": {
            "adaptive": (pa.int32(), CLOCK_US // 1000),
            "adaptive_time_microseconds": (pa.int64(), CLOCK_US - 456),
            "connect": (pa.time32("ms"), dt.time(13, 51, 30, 123000)),
        }[mode],
        "local": (pa.timestamp("us", tz="UTC"), AT)
        if mode != "connect"
        else (pa.timestamp("ms", tz="UTC"), AT.replace(microsecond=123000)),
        "local3": (pa.timestamp("ms", tz="UTC"), AT.replace(microsecond=123000)),
        "at": (pa.timestamp("us", tz="UTC"), AT.replace(hour=11)),
        "at3": (pa.timestamp("us", tz="UTC"), AT.replace(hour=11, microsecond=100000)),
    }
    for mode in EXPECTED
}


def _events(log: FileLog, topic: str) -> list[dict[str, Any]]:
    if topic not in log.list_topics():
        return []
    out = []
    for partition in range(log.partition_count(topic)):
        offset = 0
        while batch := log.read(topic, partition, offset):
            out += [json.loads(r.value) for r in batch if r.value is not None]
            offset = batch[-1].offset + 1
    return sorted(out, key=lambda e: e["payload"]["after"]["id"])


def _lake(lake: Path, topic: str) -> pa.Table | None:
    files = sorted((lake / "topics" / topic).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]) if files else None


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_temporal_columns_in_the_log_and_in_the_lake(
    postgres_url: str, start_herder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    made: list[int] = []  # rows the snapshot sent as Arrow columns
    original = snapshot.SnapshotPhase._batch

    def counting(self: Any, table: Any, rows: Any) -> list[Any]:
        out = original(self, table, rows)
        made.extend(len(b) for b in out if isinstance(b, SourceBatch))
        return out

    monkeypatch.setattr(snapshot.SnapshotPhase, "_batch", counting)
    run(
        postgres_url,
        *TABLES,
        # rows 1-3 are the snapshot's (one chunk: its first row is a record of its own
        # source.snapshot mark, its newest is held back, so the chunk of three sends one
        # as columns); row 4 is streamed
        *(f"INSERT INTO t VALUES ({i}, {ROW})" for i in (1, 2, 3)),
        "INSERT INTO tz VALUES (1, '13:51:30.123789+02')",
    )
    herder = start_herder({"task.isolation": "thread"})
    herder.put_connector_config(
        "cdc",
        {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "connection.url": postgres_url,
            "topic.prefix": "srv",
            "poll.interval.ms": "100",
            "time.precision.mode": mode,
        },
        allow_replace=False,
    )
    lake = tmp_path / "lake"
    herder.put_connector_config(
        "lake",
        {
            "connector.class": "io.confluent.connect.hdfs3.Hdfs3SinkConnector",
            "topics": "srv.public.t,srv.public.tz",
            "path": str(lake),
            "flush.size": "1",
        },
        allow_replace=False,
    )
    wait_until(lambda: len(_events(herder.log, "srv.public.t")) == 3, what="the snapshot")
    run(postgres_url, f"INSERT INTO t VALUES (4, {ROW})")
    events = wait_until(
        lambda: (e := _events(herder.log, "srv.public.t")) and len(e) == 4 and e,
        what="the streamed row",
    )
    assert [e["payload"]["op"] for e in events] == ["r", "r", "r", "c"]
    assert made == [1]  # the snapshot went as columns

    # The log: Debezium's names and values, the snapshot's and the stream's alike.
    for event in events:
        (after,) = [f for f in event["schema"]["fields"] if f["field"] == "after"]
        names = {f["field"]: f.get("name") for f in after["fields"]}
        values = event["payload"]["after"]
        got = {k: (names[k], values[k]) for k in EXPECTED[mode]}
        assert got == EXPECTED[mode], event["payload"]["op"]
    (zoned,) = wait_until(lambda: _events(herder.log, "srv.public.tz"), what="timetz")
    (clocktz,) = next(f for f in zoned["schema"]["fields"] if f["field"] == "after")["fields"][1:]
    assert (clocktz["name"], zoned["payload"]["after"]["clocktz"]) == (
        DBZ + "ZonedTime",
        "11:51:30.123789Z",
    )

    # The lake: each row image's dates and timestamps as Parquet's.
    table = wait_until(
        lambda: (t := _lake(lake, "srv.public.t")) is not None and t.num_rows == 4 and t,
        what="the lake",
    )
    after_type = table.schema.field("after").type
    assert {f.name: f.type for f in after_type if f.name != "id"} == {
        k: v[0] for k, v in LAKE[mode].items()
    }
    want = {k: v[1] for k, v in LAKE[mode].items()}
    for row in table.to_pylist():
        assert {k: v for k, v in row["after"].items() if k != "id"} == want
