"""A worker running a PostgresCdcSource keeps the connector's heavy libraries out of its
own process: only the task process, which reads the database, loads them; and a task
that only streams leaves out the snapshot's pyarrow too.

A real `connect standalone` process (embedded log: tasks in processes of their own, the
default), a live PostgreSQL, the connector validated and created through REST as an
operator would. What a process has loaded is read from `/proc/PID/maps` (the shared
objects each library brings: libarrow, numpy's _multiarray_umath, psycopg2's _psycopg,
SQLAlchemy's compiled extensions). The task process must show psycopg2 there: the
check can see a library when it is loaded, so its "absent" in the worker means absent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from log import FileLog
from tests.connectors.postgres.helpers import db, run
from tests.integration.conftest import JSON, WorkerProcess
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

#: a library -> a path fragment of a shared object it maps when imported
MARKERS = {
    "pyarrow": "libarrow",
    "numpy": "_multiarray_umath",
    "psycopg2": "psycopg2/_psycopg",
    "sqlalchemy": "/sqlalchemy/",
}
#: what loading them cost the worker's process before they were imported lazily: 57 MB
#: idle, 123 MB once a PostgresCdcSource had been validated and created (2026-11-26)
GROWTH_BOUND_MB = 30
SLOT = "light_slot"


def loaded(pid: int) -> set[str]:
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {lib for lib, marker in MARKERS.items() if marker in maps}


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def cdc_config(postgres_url: str, **extra: str) -> dict[str, str]:
    """Debezium's keys, as the peers bench gives them (no connection.url: a URL is
    SQLAlchemy's, and loads it)."""
    url = sa.make_url(postgres_url)
    run(
        postgres_url,
        "CREATE TABLE orders (id int PRIMARY KEY, item text)",
        "INSERT INTO orders SELECT n, 'item ' || n FROM generate_series(1, 500) n",
    )
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": str(url.host),
        "database.port": str(url.port),
        "database.user": str(url.username),
        "database.dbname": str(url.database),
        "topic.prefix": "srv",
        "slot.name": SLOT,
        "table.include.list": "public\\.orders",
        "poll.interval.ms": "100",
        **extra,
    }


def stop_and_drop(worker: WorkerProcess, postgres_url: str) -> None:
    assert worker.request("DELETE", "/connectors/cdc")[0] == 204
    assert worker.stop() == 0
    run(postgres_url, f"SELECT pg_drop_replication_slot('{SLOT}')")


def test_the_worker_process_loads_none_of_the_cdc_task_libraries(
    start_worker: Callable[..., WorkerProcess], postgres_url: str
) -> None:
    config = cdc_config(postgres_url)
    worker = start_worker(config={"key.converter": JSON, "value.converter": JSON})
    idle_mb = rss_mb(worker.proc.pid)

    code, body = worker.request(
        "PUT", "/connector-plugins/PostgresConnector/config/validate", {"name": "cdc", **config}
    )
    errors = [c["value"] for c in body["configs"] if c["value"]["errors"]]
    assert code == 200 and body["error_count"] == 0, errors
    code, body = worker.request("POST", "/connectors", {"name": "cdc", "config": config})
    assert code == 201, body
    worker.wait_state("cdc", "RUNNING", timeout_s=60)

    def task_has_read_the_snapshot() -> list[int] | None:
        tasks = [p for p in worker.task_pids() if "psycopg2" in loaded(p)]
        offsets = worker.request("GET", "/connectors/cdc/offsets")[1]
        return tasks if tasks and offsets and offsets.get("offsets") else None

    tasks = wait_until(task_has_read_the_snapshot, 60, "the CDC task's snapshot offsets")
    assert {"psycopg2", "pyarrow"} <= loaded(tasks[0])  # the check sees them where they are
    environ = Path(f"/proc/{tasks[0]}/environ").read_bytes().split(b"\0")
    # connect.worker.memory's allocator settings, inherited by the task process
    assert {b"ARROW_DEFAULT_MEMORY_POOL=system", b"MALLOC_ARENA_MAX=2"} <= set(environ)
    assert loaded(worker.proc.pid) == set()
    assert rss_mb(worker.proc.pid) - idle_mb < GROWTH_BOUND_MB

    stop_and_drop(worker, postgres_url)


def test_a_task_that_only_streams_loads_no_arrow(
    start_worker: Callable[..., WorkerProcess], postgres_url: str, tmp_path: Path
) -> None:
    """pyarrow (with numpy, ~40 MB) is the snapshot's columnar path: a task that
    streams only (snapshot.mode=no_data, as after a finished snapshot) never loads it."""
    config = cdc_config(postgres_url, **{"snapshot.mode": "no_data"})
    worker = start_worker(config={"key.converter": JSON, "value.converter": JSON})
    assert worker.request("POST", "/connectors", {"name": "cdc", "config": config})[0] == 201
    worker.wait_state("cdc", "RUNNING", timeout_s=60)
    with db(postgres_url) as cur:

        def slot_made() -> bool:
            cur.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (SLOT,))
            return cur.fetchone() is not None

        wait_until(slot_made, 60, "the task's slot")
        cur.execute("INSERT INTO orders SELECT n, 'new ' || n FROM generate_series(501, 800) n")
    with FileLog(tmp_path / "log", background=False) as log:

        def streamed() -> bool:
            topic = "srv.public.orders"
            return topic in log.list_topics() and log.latest_offset(topic, 0) >= 300

        wait_until(streamed, 60, "300 streamed changes in srv.public.orders")
    (task,) = [p for p in worker.task_pids() if "psycopg2" in loaded(p)]
    assert loaded(task) == {"psycopg2"}
    stop_and_drop(worker, postgres_url)
