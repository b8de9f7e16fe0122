"""Driving PostgresCdcSourceTask the way the runtime does, and reading its events."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg2
import sqlalchemy as sa

from connect.api import SourceRecord, Struct
from connect.api.batches import SourceBatch
from connectors.postgres import PostgresCdcSourceTask
from tests.connectors.fakes import FakeOffsetReader, FakeSourceContext


def dsn(url: str) -> dict[str, Any]:
    u = sa.make_url(url)
    return {"host": u.host, "port": u.port, "user": u.username, "dbname": u.database}


@contextmanager
def db(url: str) -> Iterator[Any]:
    """An autocommit psycopg2 cursor on the test database."""
    conn = psycopg2.connect(**dsn(url))
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


def run(url: str, *statements: str) -> None:
    with db(url) as cur:
        for sql in statements:
            cur.execute(sql)


def config(url: str, **extra: str) -> dict[str, str]:
    return {
        "connection.url": url,
        "topic.prefix": "srv",
        "poll.interval.ms": "100",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


class Driver:
    """A task with the runtime's commit protocol: after each poll every record is
    "in the log" (`commit_record`), and `commit_offsets()` stores the newest offset
    and calls `commit()` — as WorkerSourceTask does after its fsync."""

    def __init__(self, props: dict[str, str], reader: FakeOffsetReader | None = None) -> None:
        self.reader = reader or FakeOffsetReader()
        self.task = PostgresCdcSourceTask()
        self.task.initialize(FakeSourceContext(props, self.reader))
        self.task.start(props)
        self.records: list[SourceRecord] = []
        self.batches = 0
        self._pending: tuple[Any, Any] | None = None

    def poll_once(self) -> list[SourceRecord]:
        """The next poll's records (a snapshot chunk's SourceBatch as its records, the
        way the runtime takes it when a stage cannot work on columns)."""
        got: list[SourceRecord] = []
        for item in self.task.poll() or []:
            if isinstance(item, SourceBatch):
                self.batches += 1
                got += item.records()
            else:
                got.append(item)
        for rec in got:
            self.task.commit_record(rec, None)
            if rec.source_offset is not None:
                self._pending = (rec.source_partition, rec.source_offset)
        self.records += got
        return got

    def commit_offsets(self) -> None:
        if self._pending is not None:
            self.reader.put(*self._pending)
            self._pending = None
        self.task.commit()

    def poll_until(
        self, predicate: Callable[[list[SourceRecord]], bool], timeout_s: float = 30.0
    ) -> list[SourceRecord]:
        deadline = time.monotonic() + timeout_s
        while not predicate(self.records):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out with {len(self.records)} records")
            self.poll_once()
        return self.records

    def poll_count(self, n: int, timeout_s: float = 30.0) -> list[SourceRecord]:
        return self.poll_until(lambda r: len(r) >= n, timeout_s)

    def stop(self) -> None:
        self.task.stop()


def plain(value: Any) -> Any:
    return value.to_dict() if isinstance(value, Struct) else value


def events(records: list[SourceRecord]) -> list[tuple]:
    """(topic, op or None for a tombstone, key dict, before, after) per record."""
    out = []
    for r in records:
        if r.value is None:
            out.append((r.topic, None, plain(r.key), None, None))
        else:
            v = r.value
            out.append(
                (r.topic, v.get("op"), plain(r.key), plain(v.get("before")), plain(v.get("after")))
            )
    return out


def replay(records: list[SourceRecord], topic: str, key: str = "id") -> dict[Any, dict]:
    """The table the events describe: key -> row."""
    rows: dict[Any, dict] = {}
    for r in records:
        if r.topic != topic or r.value is None:
            continue
        op = r.value.get("op")
        if op in ("r", "c", "u"):
            after = r.value.get("after").to_dict()
            rows[after[key]] = after
        elif op == "d":
            rows.pop(r.value.get("before").to_dict()[key], None)
        elif op == "t":
            rows.clear()
    return rows


def table_rows(url: str, table: str, key: str = "id") -> dict[Any, dict]:
    with db(url) as cur:
        cur.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cur.description]
        rows = [
            [bytes(v) if isinstance(v, memoryview) else v for v in row] for row in cur.fetchall()
        ]
        return {row[names.index(key)]: dict(zip(names, row, strict=True)) for row in rows}
