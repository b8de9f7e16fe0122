"""JdbcSink's COPY path on PostgreSQL: a run of a few deletes probes the table's key
index, it does not scan the table. The stage (a temporary table, never analyzed by
autovacuum) had no statistics, so PostgreSQL took it for ~2,000 rows and hashed the
WHOLE target table for every delete run: a CDC stream alternates upsert and delete
runs, and a restarted worker's catch-up (large puts of many runs) crawled. Counted here
by the server itself (pg_stat_user_tables.seq_scan), which does not depend on the
machine's load."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.jdbc.sink import JdbcSinkTask
from tests.connectors.jdbc.test_sink_truncate import change, rows, start_pipeline
from tests.connectors.postgres.helpers import db
from tests.waiting import wait_until

pytestmark = pytest.mark.postgres

TABLE_ROWS = 2_000
TRANSACTIONS = 60


def table_stats(url: str) -> tuple[int, int] | None:
    """(seq_scan, n_tup_del) of table `t`, as the server counted them."""
    with db(url) as cur:
        cur.execute("SELECT seq_scan, n_tup_del FROM pg_stat_user_tables WHERE relname = 't'")
        found: Any = cur.fetchone()
    return None if found is None else (found[0], found[1])


@pytest.mark.parametrize("driver", ["postgresql+psycopg2", "postgresql+psycopg"])
def test_delete_runs_probe_the_key_index_instead_of_scanning_the_table(
    postgres_url: str, driver: str
) -> None:
    url = postgres_url.replace("postgresql+psycopg2", driver)
    tasks: list[JdbcSinkTask] = []
    put = start_pipeline(url, tasks)
    try:
        put([change("r", i, f"s{i}") for i in range(1, TABLE_ROWS + 1)])
        # One put as a catch-up after a restart makes it: transactions of an update, a
        # delete and an insert, so upsert and delete runs alternate (each stage is used
        # many times in the put's transaction: TRUNCATEd between uses).
        changes = []
        for n in range(TRANSACTIONS):
            changes += [
                change("u", 2 * n + 1, f"u{n}"),
                change("d", 2 * n + 2),
                change("c", TABLE_ROWS + n + 1, f"n{n}"),
            ]
        put(changes)
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
