"""The CDC round trip into Delta: PostgresCdcSource (snapshot, then the stream) →
log → DeltaSink in merge mode, on a real `connect standalone` worker and PostgreSQL;
inserts, updates (the key's row changed twice in a row too) and deletes committed
meanwhile: the table then equals the source table, row for row."""

from __future__ import annotations

import decimal
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from deltalake import DeltaTable

from tests.integration.conftest import JSON, WorkerProcess, connector_file
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.slow]

ROWS = 2_000
COLUMNS = ("id", "name", "amount", "ok")


def _source_rows(engine: sa.Engine) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.text(
            "SELECT id, name, amount, ok FROM src ORDER BY id"))]


def _table_rows(path: Path) -> list[tuple]:
    try:
        table = DeltaTable(str(path)).to_pyarrow_table(columns=list(COLUMNS))
    except Exception:  # not created yet
        return []
    return sorted(zip(*(table.column(c).to_pylist() for c in COLUMNS), strict=True))


def test_the_table_equals_the_source_table(
    tmp_path: Path, postgres_url: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE src (id int PRIMARY KEY, name text, "
                             "amount numeric(12,2), ok boolean)"))
        conn.execute(sa.text(
            "INSERT INTO src SELECT n, 's' || n, n / 4.0, n % 3 = 0 "
            f"FROM generate_series(1, {ROWS}) n"))
    source = connector_file(tmp_path, "cdc", {
        "connector.class": "PostgresCdcSource",
        "connection.url": postgres_url,
        "topic.prefix": "srv",
        "slot.name": "delta_slot",
        "table.include.list": "public\\.src",
        "poll.interval.ms": "50",
    })
    path = tmp_path / "lake" / "src"
    sink = connector_file(tmp_path, "lake", {
        "connector.class": "DeltaSink",
        "topics": "srv.public.src",
        "delta.table.uri": str(path),
        "delta.write.mode": "merge",
        "delta.id.columns": "id",
        "delta.commit.interval.ms": "200",
    })
    worker = start_worker([source, sink], {"key.converter": JSON, "value.converter": JSON})
    try:
        wait_until(lambda: len(_table_rows(path)) == ROWS, 60, "the snapshot in the table")
        with engine.begin() as conn:  # one transaction: one poll, changes of a key in it
            conn.execute(sa.text("UPDATE src SET name = 'u' || id WHERE id % 7 = 0"))
            conn.execute(sa.text("UPDATE src SET amount = amount + 1 WHERE id % 7 = 0"))
            conn.execute(sa.text("DELETE FROM src WHERE id % 11 = 0"))
            conn.execute(sa.text("INSERT INTO src VALUES (5000, 'new', 1.50, NULL)"))
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM src WHERE id = 5000"))
            conn.execute(sa.text("INSERT INTO src VALUES (5000, 'again', 2.25, true)"))
            conn.execute(sa.text("UPDATE src SET ok = NOT ok WHERE id BETWEEN 100 AND 199"))
        expected = _source_rows(engine)
        wait_until(lambda: _table_rows(path) == expected, 60, "the table equal to the source")
    finally:
        assert worker.stop() == 0
        engine.dispose()
    assert expected[-1] == (5000, "again", decimal.Decimal("2.25"), True)
    assert len(expected) == ROWS + 1 - ROWS // 11
