"""JdbcSink and a CDC stream, whose transactions alternate upserts and deletes: a put
is written as each key's last operation (`reduce_runs`), in a few statements, and the
table ends as record by record; on PostgreSQL a delete run probes the table's key
index instead of scanning the table.

Both were a restarted worker's catch-up crawling (large puts of many runs): each
source transaction made an upsert run and a delete run, each run three or four
statements, and the delete's stage (a temporary table, never analyzed by autovacuum,
its statistics reset by TRUNCATE) was taken by PostgreSQL for ~2,000 rows, so every
delete run hashed the WHOLE target table. What is counted here (statements, the
server's seq_scan) does not depend on the machine's load."""

from __future__ import annotations

import random
from typing import Any

import pytest
import sqlalchemy as sa

from connect.api import INT64_SCHEMA
from connectors.jdbc.sink import JdbcSinkTask
from connectors.jdbc.sink_fields import Column, FieldsPlan
from connectors.jdbc.sink_writer import TRUNCATE, Run, reduce_runs
from tests.connectors.jdbc.test_sink_truncate import change, rows, start_pipeline
from tests.connectors.postgres.helpers import db
from tests.waiting import wait_until

TABLE_ROWS = 2_000
TRANSACTIONS = 60


def plan(*names: str, n_key: int = 1) -> FieldsPlan:
    columns = tuple(Column(n, INT64_SCHEMA, i < n_key) for i, n in enumerate(names))
    return FieldsPlan(columns, n_key, lambda r: (), lambda r: (), {})


def test_reduce_runs_keeps_each_keys_last_operation() -> None:
    upsert, delete = plan("id", "v"), plan("id")
    runs = [
        Run(upsert, "upsert", [(1, 10), (2, 20)]),
        Run(delete, "delete", [(1,)]),
        Run(upsert, "upsert", [(3, 30), (2, 21)]),
        Run(delete, "delete", [(2,), (4,)]),
        Run(upsert, "upsert", [(4, 40), (5, 50)]),
        Run(delete, "delete", [(5,)]),
    ]
    out = reduce_runs(runs)
    assert [(r.op, r.plan, sorted(r.rows)) for r in out] == [
        ("delete", delete, [(1,), (2,), (5,)]),
        ("upsert", upsert, [(3, 30), (4, 40)]),
    ]


def test_reduce_runs_stops_at_a_truncate_another_plan_or_another_key() -> None:
    upsert, other, delete = plan("id", "v"), plan("id", "w"), plan("id")
    by_name = plan("name")
    runs = [
        Run(upsert, "upsert", [(1, 10)]),
        Run(delete, "delete", [(1,)]),
        Run(None, TRUNCATE, [()]),
        Run(upsert, "upsert", [(1, 11)]),
        Run(other, "upsert", [(1, 12)]),  # another shape: its columns, not upsert's
        Run(delete, "delete", [(2,)]),
        Run(by_name, "delete", [("x",)]),  # other key columns
        Run(upsert, "insert", [(3, 30)]),
    ]
    out = reduce_runs(runs)
    assert [(r.op, r.plan, r.rows) for r in out] == [
        ("delete", delete, [(1,)]),
        (TRUNCATE, None, [()]),
        ("upsert", upsert, [(1, 11)]),
        ("delete", delete, [(2,)]),
        ("upsert", other, [(1, 12)]),
        ("delete", by_name, [("x",)]),
        ("insert", upsert, [(3, 30)]),
    ]


def cdc_stream(rng: random.Random, transactions: int, *, first_id: int) -> list[Any]:
    """Change events as a source's transactions make them: two updates, a delete and
    three inserts each (keys repeat, deleted keys come back), a truncate a quarter in."""
    live = list(range(1, first_id))
    next_id = first_id
    out = []
    for n in range(transactions):
        if n == transactions // 4:
            out.append(change("t"))
            live.clear()
        for id_ in rng.sample(live, min(2, len(live))):
            out.append(change("u", id_, f"u{n}"))
        if live:
            out.append(change("d", live.pop(rng.randrange(len(live)))))
        for _ in range(3):
            id_ = rng.choice([next_id, next_id, *live[:1]])  # now and then one again
            if id_ == next_id:
                next_id += 1
                live.append(id_)
            out.append(change("c", id_, f"n{n}"))
    return out


def test_a_cdc_put_is_written_in_a_few_statements_and_ends_as_record_by_record(
    db_url: str,
) -> None:
    tasks: list[JdbcSinkTask] = []
    try:
        put = start_pipeline(db_url, tasks)
        put([change("r", i, f"s{i}") for i in range(1, 201)])
        stream = cdc_stream(random.Random(7), TRANSACTIONS, first_id=201)
        statements: list[str] = []
        engine = tasks[0].writer.engine
        sa.event.listen(engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        put(stream)
        reduced = rows(db_url)
        # One stretch of upsert/delete runs before the truncate and one after: each
        # at most a delete and an upsert, each a stage's COPY (not counted here: it goes
        # through the driver's cursor), an ANALYZE and a statement, or an executemany.
        assert len(statements) <= 12, statements
        one_by_one = start_pipeline(db_url, tasks, table_name_format="one")
        one_by_one([change("r", i, f"s{i}") for i in range(1, 201)])
        for record in stream:
            one_by_one([record])
    finally:
        for task in tasks:
            task.stop()
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            expected = [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM one ORDER BY id")]
    finally:
        engine.dispose()
    assert reduced == expected
    assert len(expected) > 50


def table_stats(url: str) -> tuple[int, int] | None:
    """(seq_scan, n_tup_del) of table `t`, as the server counted them."""
    with db(url) as cur:
        cur.execute("SELECT seq_scan, n_tup_del FROM pg_stat_user_tables WHERE relname = 't'")
        found: Any = cur.fetchone()
    return None if found is None else (found[0], found[1])


@pytest.mark.postgres
@pytest.mark.parametrize("driver", ["postgresql+psycopg2", "postgresql+psycopg"])
def test_delete_runs_probe_the_key_index_instead_of_scanning_the_table(
    postgres_url: str, driver: str
) -> None:
    url = postgres_url.replace("postgresql+psycopg2", driver)
    tasks: list[JdbcSinkTask] = []
    put = start_pipeline(url, tasks)
    try:
        put([change("r", i, f"s{i}") for i in range(1, TABLE_ROWS + 1)])
        # Source transactions one put each (a stream that keeps up): an update, a
        # delete and an insert, each delete its own run on the delete stage.
        for n in range(TRANSACTIONS):
            put(
                [
                    change("u", 2 * n + 1, f"u{n}"),
                    change("d", 2 * n + 2),
                    change("c", TABLE_ROWS + n + 1, f"n{n}"),
                ]
            )
    finally:
        for task in tasks:
            task.stop()  # the session ends: the server publishes its counts
    counted = wait_until(
        lambda: (s := table_stats(url)) is not None and s[1] >= TRANSACTIONS and s,
        30,
        "the sink's session's counts of t",
    )
    # One scan is the upsert stage's creation (CREATE TEMPORARY TABLE … AS SELECT … FROM
    # t WITH NO DATA opens a scan of t that reads nothing); without statistics on the
    # delete stage, every one of the 60 delete runs scanned t too (61).
    assert counted == (1, TRANSACTIONS), "(seq scans, deletes): a delete run scanned the table"
    expected = {i: f"s{i}" for i in range(1, TABLE_ROWS + 1)}
    for n in range(TRANSACTIONS):
        expected[2 * n + 1] = f"u{n}"
        del expected[2 * n + 2]
        expected[TABLE_ROWS + n + 1] = f"n{n}"
    assert rows(url) == sorted(expected.items())
