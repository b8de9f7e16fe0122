"""PostgresCdcSourceTask against a real PostgreSQL: snapshot, then a mixed stream of
inserts, updates, deletes and truncates, Debezium's envelope, keys, tombstones and
topics, REPLICA IDENTITY FULL, filters and skipped operations."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from tests.connectors.postgres.helpers import Driver, config, events, replay, run, table_rows

pytestmark = pytest.mark.postgres

SCHEMA = (
    "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), "
    "at timestamptz, day date, flag boolean, data bytea, n bigint, f float8)"
)


def as_debezium(row: dict) -> dict:
    """A row of `items` as read through psycopg2, in Debezium's representation."""
    out = dict(row)
    if out["at"] is not None:
        out["at"] = out["at"].astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if out["day"] is not None:
        out["day"] = (out["day"] - dt.date(1970, 1, 1)).days
    return out


def test_snapshot_then_mixed_stream(postgres_url: str) -> None:
    run(
        postgres_url,
        SCHEMA,
        "INSERT INTO items VALUES (1, 'a\tb\\c', 1.5, '2024-01-02 03:04:05.123456+00', "
        "'2024-01-02', true, '\\x0102', 10, 0.5), (2, 'two', NULL, NULL, NULL, NULL, NULL, "
        "NULL, NULL)",
        "CREATE TABLE nokey (v text)",
        "INSERT INTO nokey VALUES ('x')",
    )
    d = Driver(config(postgres_url, skipped_operations="none"))
    try:
        snap = d.poll_count(3)
        assert [r.value.get("op") for r in snap] == ["r", "r", "r"]
        # Debezium's marks: the snapshot's first and last, each table's last
        assert [r.value.get("source").get("snapshot") for r in snap] == [
            "first",
            "last_in_data_collection",
            "last",
        ]
        first = snap[0]
        assert first.topic == "srv.public.items"
        assert first.key.to_dict() == {"id": 1}
        after = first.value.get("after").to_dict()
        assert after == {
            "id": 1,
            "name": "a\tb\\c",
            "price": decimal.Decimal("1.50"),
            "at": "2024-01-02T03:04:05.123456Z",  # Debezium's ZonedTimestamp
            "day": (dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days,  # io.debezium.time.Date
            "flag": True,
            "data": b"\x01\x02",
            "n": 10,
            "f": 0.5,
        }
        src = first.value.get("source").to_dict()
        assert src["connector"] == "postgresql" and src["name"] == "srv"
        assert src["schema"] == "public" and src["table"] == "items"
        assert src["lsn"] > 0 and src["db"]
        assert snap[2].topic == "srv.public.nokey" and snap[2].key is None
        assert first.source_partition == {"server": "srv"}
        assert snap[0].source_offset["snapshot"] is True
        assert snap[2].source_offset["last_snapshot_record"] is True

        run(
            postgres_url,
            "INSERT INTO items (id, name) VALUES (3, 'three')",
            "BEGIN; UPDATE items SET name = 'uno' WHERE id = 1; "
            "INSERT INTO items (id, name) VALUES (4, 'four'); COMMIT",
            "DELETE FROM items WHERE id = 2",
            "UPDATE items SET id = 5 WHERE id = 4",
            "TRUNCATE nokey",
            "INSERT INTO nokey VALUES ('y')",
        )
        got = events(d.poll_count(3 + 10)[3:])
        t = "srv.public.items"
        assert got[0] == (
            t,
            "c",
            {"id": 3},
            None,
            {**dict.fromkeys(after), "id": 3, "name": "three"},
        )
        assert got[1][:3] == (t, "u", {"id": 1}) and got[1][3] is None
        assert got[1][4]["name"] == "uno" and got[1][4]["price"] == decimal.Decimal("1.50")
        assert got[2][:3] == (t, "c", {"id": 4})
        assert got[3][:3] == (t, "d", {"id": 2})
        assert got[3][3]["id"] == 2 and got[3][3]["name"] == ""  # key-only image
        assert got[4] == (t, None, {"id": 2}, None, None)  # the tombstone
        # a primary-key change: delete + tombstone of the old key, create of the new
        assert [g[1] for g in got[5:8]] == ["d", None, "c"]
        assert got[5][2] == {"id": 4} and got[7][2] == {"id": 5}
        assert got[8][:3] == ("srv.public.nokey", "t", None)
        assert got[9][:2] == ("srv.public.nokey", "c")
        assert replay(d.records, t) == {
            k: as_debezium(row) for k, row in table_rows(postgres_url, "items").items()
        }
        # offsets: LSNs grow in commit order; each transaction's last record closes it
        lsns = [r.source_offset["lsn_commit"] for r in d.records[3:]]
        assert lsns == sorted(lsns)
    finally:
        d.stop()


def test_replica_identity_full_gives_old_rows(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL, w int)",
        "ALTER TABLE t REPLICA IDENTITY FULL",
        "INSERT INTO t VALUES (1, 'a', 1)",
    )
    d = Driver(config(postgres_url, snapshot_mode="never"))
    try:
        d.poll_once()
        run(postgres_url, "UPDATE t SET v = 'b' WHERE id = 1", "DELETE FROM t WHERE id = 1")
        got = events(d.poll_count(3))
        assert got[0][1:] == (
            "u",
            {"id": 1},
            {"id": 1, "v": "a", "w": 1},
            {"id": 1, "v": "b", "w": 1},
        )
        assert got[1][1:] == ("d", {"id": 1}, {"id": 1, "v": "b", "w": 1}, None)
        assert got[2][1] is None
    finally:
        d.stop()


def test_filters_skipped_operations_and_no_tombstones(postgres_url: str) -> None:
    run(
        postgres_url,
        "CREATE SCHEMA other",
        "CREATE TABLE a (id int PRIMARY KEY)",
        "CREATE TABLE b (id int PRIMARY KEY)",
        "CREATE TABLE other.a (id int PRIMARY KEY)",
        "INSERT INTO a VALUES (1)",
        "INSERT INTO b VALUES (1)",
        "INSERT INTO other.a VALUES (1)",
    )
    d = Driver(
        config(
            postgres_url,
            **{
                "table.include.list": "public\\.a,other\\..*",
                "skipped.operations": "u",
                "tombstones.on.delete": "false",
                "publication.autocreate.mode": "filtered",
            },
        )
    )
    try:
        snap = d.poll_count(2)
        assert sorted(r.topic for r in snap) == ["srv.other.a", "srv.public.a"]
        run(
            postgres_url,
            "UPDATE a SET id = id",
            "INSERT INTO b VALUES (2)",
            "DELETE FROM other.a",
            "TRUNCATE a",
            "INSERT INTO a VALUES (9)",
        )
        got = events(d.poll_count(5)[2:])
        # "u" replaced the default "t": truncates are emitted, updates are not
        assert [(g[0], g[1]) for g in got] == [
            ("srv.other.a", "d"),
            ("srv.public.a", "t"),
            ("srv.public.a", "c"),
        ]
    finally:
        d.stop()
