"""PostgresCdcSource's column.include.list / column.exclude.list (Debezium's column
filters): the config refuses both lists together and a regex that does not compile,
naming the key; against a real PostgreSQL the filtered columns are absent from the
value schema and from `before`/`after` of snapshot reads (the columnar and the per-row
path), inserts, updates, primary-key changes and deletes, while an excluded key column
stays in the key."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import ConfigError, SourceRecord
from connectors.postgres.config import parse_config
from connectors.postgres.source import PostgresCdcSourceConnector
from connectors.postgres.tables import ColumnFilter
from tests.connectors.postgres.helpers import Driver, config, events, run

BASE = {"database.hostname": "127.0.0.1", "database.dbname": "postgres", "topic.prefix": "p"}


def test_both_lists_are_refused_naming_the_key() -> None:
    both = {**BASE, "column.include.list": r"public\.t\.a", "column.exclude.list": r"public\.t\.b"}
    with pytest.raises(ConfigError, match=r"column\.include\.list is set too") as refused:
        parse_config(both)
    assert refused.value.name == "column.exclude.list"
    results: Any = PostgresCdcSourceConnector().validate(both)
    assert {r.name for r in results if r.errors} == {"column.exclude.list"}
    # a 1.x name counts as its list
    with pytest.raises(ConfigError, match=r"column\.include\.list is set too"):
        parse_config({**BASE, "column.whitelist": "x", "column.exclude.list": "y"})


def test_a_bad_regex_is_refused_naming_the_key() -> None:
    results: Any = PostgresCdcSourceConnector().validate({**BASE, "column.include.list": "a(b"})
    assert {r.name for r in results if r.errors} == {"column.include.list"}


def test_former_names_and_matching() -> None:
    cfg = parse_config({**BASE, "column.blacklist": r"public\.t\.secret, .*\.ssn"})
    assert cfg["column.exclude.list"] == [r"public\.t\.secret", r".*\.ssn"]
    keep = ColumnFilter(cfg["column.include.list"], cfg["column.exclude.list"])
    assert not keep("public", "t", "secret")
    assert not keep("Public", "T", "SECRET")  # matched ignoring case, as Debezium does
    assert keep("public", "t", "secret2")  # anchored: the whole name must match
    assert keep("public", "tt", "secret")
    assert not keep("other", "people", "ssn")
    only = ColumnFilter([r"public\.t\.(id|name)"], [])
    assert [c for c in ("id", "name", "names", "x") if only("public", "t", c)] == ["id", "name"]
    assert not ColumnFilter([], [])  # no filter: every column, the unfiltered fast path


def _after_fields(record: SourceRecord) -> list[str]:
    after = record.value_schema.field("after")
    assert after is not None
    return [f.name for f in after.schema.fields]


@pytest.mark.postgres
def test_filtered_columns_are_absent_from_every_event(postgres_url: str) -> None:
    run(
        postgres_url,
        # plain values: the snapshot reads this table in columns (a SourceBatch)
        "CREATE TABLE people (id int PRIMARY KEY, name text NOT NULL, ssn text, age int)",
        "INSERT INTO people VALUES (1, 'ann', '123', 30), (2, 'bob', '456', 40)",
        "INSERT INTO people SELECT i, 'n' || i, 'x', i FROM generate_series(10, 14) i",
        # a backslash in a value: the snapshot's per-row path reads this one
        "CREATE TABLE notes (id int PRIMARY KEY, body text, secret text NOT NULL)",
        "ALTER TABLE notes REPLICA IDENTITY FULL",
        "INSERT INTO notes VALUES (1, 'back\\slash', 's1')",
    )
    d = Driver(
        config(
            postgres_url,
            **{
                # the key column id of people too: it stays in the key
                "column.exclude.list": r"public\.people\.(ssn|id),PUBLIC\.NOTES\.SECRET",
            },
        )
    )
    try:
        snap = d.poll_count(8)
        assert d.batches >= 1  # the columnar path was taken for people
        people = [r for r in snap if r.topic == "srv.public.people"]
        notes = [r for r in snap if r.topic == "srv.public.notes"]
        assert [_after_fields(r) for r in people] == [["name", "age"]] * 7
        assert events(people) == [
            ("srv.public.people", "r", {"id": 1}, None, {"name": "ann", "age": 30}),
            ("srv.public.people", "r", {"id": 2}, None, {"name": "bob", "age": 40}),
        ] + [
            ("srv.public.people", "r", {"id": i}, None, {"name": f"n{i}", "age": i})
            for i in range(10, 15)
        ]
        assert _after_fields(notes[0]) == ["id", "body"]
        assert events(notes) == [
            ("srv.public.notes", "r", {"id": 1}, None, {"id": 1, "body": "back\\slash"})
        ]

        run(
            postgres_url,
            "INSERT INTO people VALUES (3, 'cy', '789', 50)",
            "UPDATE people SET ssn = '000', age = 31 WHERE id = 1",
            "UPDATE people SET id = 4 WHERE id = 2",  # a key change: d, tombstone, c
            "DELETE FROM people WHERE id = 3",
            "INSERT INTO notes VALUES (2, 'b', 's2')",
            "UPDATE notes SET secret = 's3', body = 'c' WHERE id = 2",
            "DELETE FROM notes WHERE id = 2",
        )
        got = d.poll_count(8 + 11)[8:]
        p, n = "srv.public.people", "srv.public.notes"
        assert events(got) == [
            (p, "c", {"id": 3}, None, {"name": "cy", "age": 50}),
            (p, "u", {"id": 1}, None, {"name": "ann", "age": 31}),
            (p, "d", {"id": 2}, {"name": "", "age": None}, None),  # key-only old image
            (p, None, {"id": 2}, None, None),
            (p, "c", {"id": 4}, None, {"name": "bob", "age": 40}),
            (p, "d", {"id": 3}, {"name": "", "age": None}, None),
            (p, None, {"id": 3}, None, None),
            (n, "c", {"id": 2}, None, {"id": 2, "body": "b"}),
            (n, "u", {"id": 2}, {"id": 2, "body": "b"}, {"id": 2, "body": "c"}),
            (n, "d", {"id": 2}, {"id": 2, "body": "c"}, None),
            (n, None, {"id": 2}, None, None),
        ]
        for r in got:
            if r.value is not None:
                assert _after_fields(r) == (["name", "age"] if r.topic == p else ["id", "body"])
    finally:
        d.stop()


@pytest.mark.postgres
def test_include_list_keeps_only_its_columns(postgres_url: str) -> None:
    """Only the listed columns; one left out is not even converted (README's advice
    for a multi-dimensional array column)."""
    run(
        postgres_url,
        # a two-dimensional array has no Connect value: left out, it is never converted
        "CREATE TABLE t (id int PRIMARY KEY, a text, b text, ab text, grid int[])",
        "INSERT INTO t VALUES (1, 'a', 'b', 'ab', '{{1,2},{3,4}}')",
        "CREATE TABLE u (id int PRIMARY KEY, a text)",
        "INSERT INTO u VALUES (1, 'a')",
        # no column of w is listed: empty values, keys as ever (the columnar path too)
        "CREATE TABLE w (id int PRIMARY KEY, a text)",
        "INSERT INTO w SELECT i, 'x' FROM generate_series(1, 5) i",
    )
    d = Driver(config(postgres_url, **{"column.include.list": r"public\.t\.(id|a),public\.u\..*"}))
    try:
        d.poll_count(7)
        run(postgres_url, "INSERT INTO t VALUES (2, 'x', 'y', 'z', '{{5},{6}}')")
        got = events(d.poll_count(8))
        assert sorted(got, key=lambda e: (e[0], e[2]["id"])) == [
            ("srv.public.t", "r", {"id": 1}, None, {"id": 1, "a": "a"}),
            ("srv.public.t", "c", {"id": 2}, None, {"id": 2, "a": "x"}),
            ("srv.public.u", "r", {"id": 1}, None, {"id": 1, "a": "a"}),
        ] + [("srv.public.w", "r", {"id": i}, None, {}) for i in range(1, 6)]
        assert d.batches >= 1
    finally:
        d.stop()
