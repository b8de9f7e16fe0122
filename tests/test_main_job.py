"""The README's run command (`make run`), executed on a fresh checkout path: the main
job sets everything up there and ends with its Spark SQL summary, checked against the
database it changed. And its PostgreSQL form (`--source-config
configs/main-job-postgres-cdc-source.json`) pointed at the tests' server: its banner,
the shop it makes and changes, timestamps that land as timestamps, and the one line it
prints for a database it cannot use."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from tests.conftest import ROOT
from tests.connectors.postgres.helpers import db, dsn, run, table_rows

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]


def _checkout(target: Path) -> Path:
    """The working tree's files (tracked, and new ones not ignored) at a new path."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_make_run_on_a_fresh_checkout(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path / "tributary")
    assert not (checkout / "lake").exists() and not (checkout / "data").exists()
    # The installed environment is shared (a fresh `make run` spends minutes building
    # PySpark's wheel); `-o STAMP` tells make it is up to date, so the run command
    # itself is what runs, from the new path.
    (checkout / ".venv").symlink_to(ROOT / ".venv")
    digest = subprocess.run(
        "cat pyproject.toml | cksum | cut -d' ' -f1",
        shell=True,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(checkout)
    started = time.monotonic()
    done = subprocess.run(
        ["make", "-o", f".venv/.installed-{digest}", "run"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "result: OK" in out
    assert "database check (orders and revenue per region): equal" in out
    assert "table shop-orders:" in out and "spark.read.format('tributary')" in out
    files = list((checkout / "lake/topics/shop-orders").rglob("*.parquet"))
    assert {f.parent.name for f in files} == {
        "region=apac",
        "region=eu",
        "region=latam",
        "region=us",
    }
    assert sum(pq.read_metadata(f).num_rows for f in files) >= 100_000
    assert elapsed < 120, f"the main job took {elapsed:.0f}s"


# ------------------------------------------------------------------ PostgreSQL

PG_CONFIG = "configs/main-job-postgres-cdc-source.json"


def _pg_job(
    work: Path, url: str, *args: str, timeout: float = 300, password: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m connect.demo --source-config <the shipped PostgreSQL config pointed
    at url>` in `work` (the job's relative paths — configs, data, lake — are there)."""
    (work / "configs").mkdir(parents=True, exist_ok=True)
    for name in ("main-job-worker.json", "main-job-lake-sink.json"):
        shutil.copy2(ROOT / "configs" / name, work / "configs" / name)
    shipped = json.loads((ROOT / PG_CONFIG).read_text())
    u = sa.make_url(url)
    shipped["config"].update(
        {
            "database.hostname": u.host,
            "database.port": str(u.port),
            "database.user": u.username,
            "database.dbname": u.database,
        }
    )
    if password is None:
        shipped["config"].pop("database.password")
    else:
        shipped["config"]["database.password"] = password
    (work / PG_CONFIG).write_text(json.dumps(shipped))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "connect.demo", "--source-config", PG_CONFIG, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _banner(url: str) -> str:
    u = sa.make_url(url)
    return (
        f"Tributary main job: PostgreSQL orders ({u.username}@{u.host}:{u.port}/{u.database})"
        " → PostgresCdcSource → embedded log → SparkParquetSink → ./lake"
    )


@pytest.mark.postgres
def test_postgres_main_job_changes_its_own_shop_and_lands_timestamps(
    tmp_path: Path, postgres_url: str
) -> None:
    done = _pg_job(tmp_path, postgres_url, "--rows", "20000", "--seconds", "3")
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    lines = out.splitlines()
    assert lines[0] == _banner(postgres_url)
    assert "SQLite" not in out and "JdbcSource" not in out
    assert "  public.orders: 20,000 orders made by the job, and changing" in lines
    assert "changes for 3s once slot orders_lake exists" in out
    # The job changed the database, and the log holds one row per order and change.
    changes = [int(m.replace(",", "")) for m in re.findall(r"\(([\d,]+) changes\)", out)]
    assert changes and changes[-1] > 20000
    records = re.search(r"pipeline done in [\d.]+s: ([\d,]+) records → ([\d,]+) lake rows", out)
    assert records is not None
    assert int(records[1].replace(",", "")) == changes[-1] == int(records[2].replace(",", ""))
    assert "database check (orders and revenue per region): equal" in out
    assert "result: OK" in out
    assert done.stderr == ""  # the worker's and Spark's logs went to a file
    assert "  the worker's and Spark's logs: data/main-job/job.log" in lines
    # Spark reads created_at / updated_at as timestamps (they were bigint µs before).
    columns = re.search(r"table shop-orders: [\d,]+ rows, columns (.*)", out)
    assert columns is not None
    dtypes = dict(c.rsplit(" ", 1) for c in columns[1].split(", "))
    assert (dtypes["created_at"], dtypes["updated_at"]) == ("timestamp", "timestamp")
    files = list((tmp_path / "lake/topics/shop-orders").rglob("*.parquet"))
    schema = pq.read_schema(files[0])
    assert schema.field("updated_at").type == pa.timestamp("us", tz="UTC")


@pytest.mark.postgres
def test_postgres_main_job_reruns_on_its_own_shop(tmp_path: Path, postgres_url: str) -> None:
    """A second run finds the table and the replication slot the first one left: the
    table is the job's (its comment says so), so it is made anew, and the old slot is
    dropped before the source makes its own (so changes count from the new one)."""
    from connect.demo_shop import PostgresShop

    shop = PostgresShop(dsn(postgres_url), "test")
    try:
        assert shop.owns_orders()  # no table yet
        shop.create(50, slot="orders_lake")
        run(postgres_url, "SELECT pg_create_logical_replication_slot('orders_lake', 'pgoutput')")
        shop.change(5, 5)
        assert (shop.count(), shop.changes) == (55, 60)
        assert shop.owns_orders()  # its own table, from the run before
        again = PostgresShop(dsn(postgres_url), "test")
        try:
            again.create(10, slot="orders_lake")
            assert again.count() == 10
            assert not again.slot_exists("orders_lake")
        finally:
            again.close()
    finally:
        shop.close()


@pytest.mark.postgres
def test_postgres_main_job_reads_a_users_table_and_changes_nothing(
    tmp_path: Path, postgres_url: str
) -> None:
    """A `public.orders` of the user's (timestamptz columns this time): the job says
    it changes nothing and does not, and the times land as timestamps all the same."""
    run(
        postgres_url,
        "CREATE TABLE orders (id int PRIMARY KEY, customer text, product text, "
        "amount numeric(8, 2), status text, region text, "
        "created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz)",
        "INSERT INTO orders SELECT n, 'c' || n, 'p', n, 'new', 'eu', "
        "timestamptz '2024-05-06 07:08:09.5+02', timestamptz '2024-05-06 07:08:09.5+02' "
        "FROM generate_series(1, 300) n",
    )
    before = table_rows(postgres_url, "orders")
    done = _pg_job(tmp_path, postgres_url, "--seconds", "1")
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert out.splitlines()[0] == _banner(postgres_url)
    assert (
        "  public.orders is yours: the job snapshots and streams it, and changes nothing"
        in out.splitlines()
    )
    assert "running; nothing is changed by the job (the database is yours)" in out
    assert "pipeline done in" in out and ": 300 records → 300 lake rows" in out
    assert "database check" not in out and "result: OK" in out
    assert table_rows(postgres_url, "orders") == before  # not a row changed
    columns = re.search(r"table shop-orders: [\d,]+ rows, columns (.*)", out)
    assert columns is not None
    dtypes = dict(c.rsplit(" ", 1) for c in columns[1].split(", "))
    assert (dtypes["created_at"], dtypes["updated_at"]) == ("timestamp", "timestamp")
    files = list((tmp_path / "lake/topics/shop-orders").rglob("*.parquet"))
    landed = pq.read_table(files[0]).column("updated_at").to_pylist()[0]
    assert landed == dt.datetime(2024, 5, 6, 5, 8, 9, 500000, tzinfo=dt.UTC)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.postgres
def test_postgres_main_job_leaves_a_users_table_alone_or_says_what_it_lacks(
    tmp_path: Path, postgres_url: str
) -> None:
    run(postgres_url, "CREATE TABLE orders (id int PRIMARY KEY, total numeric)")
    done = _pg_job(tmp_path, postgres_url, timeout=120)
    assert done.returncode == 2
    line = _one_line(done)
    assert line.startswith("main job: public.orders at tributary@127.0.0.1:")
    assert "has no column customer, product, amount, status, region, updated_at" in line
    assert done.stdout.splitlines()[0] == _banner(postgres_url)
    assert not (tmp_path / "lake").exists()  # refused before anything ran
    with db(postgres_url) as cur:  # the user's table is untouched
        cur.execute("SELECT obj_description('orders'::regclass, 'pg_class')")
        assert cur.fetchone() == (None,)


def test_postgres_main_job_says_in_one_line_when_there_is_no_server(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = _pg_job(tmp_path, f"postgresql://someone@127.0.0.1:{port}/shop", timeout=120)
    assert done.returncode == 2
    line = _one_line(done)
    assert line.startswith(
        f"main job: cannot connect to PostgreSQL at someone@127.0.0.1:{port}/shop: "
    )
    assert "password" not in line


@pytest.mark.postgres
def test_postgres_main_job_says_in_one_line_why_its_source_failed(
    tmp_path: Path, postgres_url: str, postgres_server: Any
) -> None:
    """A user who may make the shop but not replicate: the source's task fails, and
    the job stops with its reason in one line (the trace in a file), not a traceback."""
    database = sa.make_url(postgres_url).database
    run(
        postgres_url,
        "CREATE ROLE shopper LOGIN PASSWORD 'secret-pw'",
        "GRANT CREATE, USAGE ON SCHEMA public TO shopper",
    )
    try:
        done = _pg_job(
            tmp_path,
            postgres_server.url(database, user="shopper", password="secret-pw"),
            "--rows",
            "100",
            password="secret-pw",
            timeout=180,
        )
        assert done.returncode == 1, done.stdout + done.stderr
        line = _one_line(done)
        assert line == (
            "main job: connector orders-source failed: connect.api.errors.ConnectError: user "
            "'shopper' may not use replication: grant it with ALTER ROLE \"shopper\" "
            "REPLICATION (and allow it in pg_hba.conf) "
            "(trace in data/main-job/orders-source.trace)"
        )
        assert "secret-pw" not in done.stdout + done.stderr
        assert "Traceback" in (tmp_path / "data/main-job/orders-source.trace").read_text()
    finally:
        run(
            postgres_url,
            "DROP TABLE IF EXISTS orders",
            "DROP OWNED BY shopper",
            "DROP ROLE shopper",
        )


def test_iceberg_main_job_shows_time_travel_without_a_jvm(tmp_path: Path) -> None:
    """`--table-format iceberg`: IcebergSink into shop.orders, the summary read with
    pyiceberg (every version landed, the latest per region equals the database, the
    first snapshot against now), and no SparkSession started for it."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "connect.demo", "--table-format", "iceberg", "--rows", "3000",
         "--seconds", "3", "--inserts-per-s", "500", "--updates-per-s", "300"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "→ IcebergSink → ./lake" in out
    assert "time travel: as of the first snapshot" in out
    assert "database check (orders and revenue per region): equal" in out
    assert "result: OK" in out
    assert list((tmp_path / "lake/iceberg/shop/orders/data").glob("*.parquet"))
    assert "SparkContext" not in (tmp_path / "data/main-job/job.log").read_text()
