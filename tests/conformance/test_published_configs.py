"""Connector configs as Kafka Connect users have them, from the public places they learn
from, run as published on a real StandaloneHerder (tasks as threads, one FileLog) against
the real servers the suite has: MariaDB (tests/mysql.py), PostgreSQL (tests/pg.py), the
local S3 server (tests/s3.py), SQLite files and plain files.

The only change made to a config is `tests.conformance.published.localize()`: hosts,
ports, paths, buckets and credentials. Everything else — class names, transform chains,
predicates, JSON numbers where strings belong, keys that mean nothing here — is as
published. Each case names its source (repository, path, commit; the copies' headers and
SOURCES.md files say the same) and asserts the outcome: rows in the table, objects in the
bucket, lines in the file, fields after the transforms.

The worker is the one demo-scene's docker-compose describes, moved to what the test can
produce without a schema registry: String keys, JSON values with schemas (the JDBC sinks
need a schema, as they do in Kafka Connect). Records that a published source connector we
do not ship would have made (Voluble, ksqlDB) are appended to the topic by the test, with
the fields that source makes; the source configs themselves are in `NOT_SHIPPED`, each
refused with a clear "no plugin" message.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from connect.herder.standalone import StandaloneHerder
from log import FileLog
from tests.conformance.published import PUBLISHED, Site, load, localize
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration]

STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"

DEMO_SCENE = "confluentinc/demo-scene {} @ dc2b351f"
DEMO = DEMO_SCENE.format("kafka-connect-single-message-transforms/{}")
JDBC = "confluentinc/kafka-connect-jdbc config/{} @ {}"
KAFKA = "apache/kafka {} @ 1eb76443"
DBZ = "debezium/debezium-examples {} @ {}"


# ----------------------------------------------------------------------------- helpers


def schema_of(fields: dict[str, str], **extra: Any) -> dict[str, Any]:
    """A JsonConverter struct schema of optional fields (`name: type`, or a nested schema)."""
    return {
        "type": "struct",
        "optional": False,
        **extra,
        "fields": [
            (t if isinstance(t, dict) else {"type": t, "optional": True}) | {"field": n}
            for n, t in fields.items()
        ],
    }


TXN = schema_of(
    {
        "item": "string",
        "cost": "string",
        "units": "string",
        "card_type": "string",
        "cc_num": "string",
        "cc_exp": "string",
        "txn_date": "string",
    }
)


def txn(i: int) -> dict[str, Any]:
    """A transaction as demo-scene's Voluble generator makes them (every field a string;
    txn_date in Java's Date.toString() form)."""
    return {
        "item": f"Beer {i}",
        "cost": f"{i}.50",
        "units": str(i % 9 + 1),
        "card_type": "visa",
        "cc_num": f"4111-{i:04d}",
        "cc_exp": "12/30",
        "txn_date": f"Wed Dec {i % 28 + 1:02d} 07:59:52 GMT 2020",
    }


@dataclass
class Run:
    """One case's herder, site and helpers."""

    herder: StandaloneHerder
    site: Site
    request: pytest.FixtureRequest

    @property
    def log(self) -> FileLog:
        return self.herder.log  # type: ignore[return-value]

    def start(self, relative: str) -> str:
        """Create the published connector (localized), as `PUT /connectors/<name>/config`
        or `connect standalone ... file` would; its name."""
        name, config = load(relative)
        self.herder.put_connector_config(name, localize(config, self.site), allow_replace=True)
        return name

    def produce(
        self,
        topic: str,
        schema: dict[str, Any] | None,
        values: list[Any],
        *,
        keys: list[bytes | None] | None = None,
        timestamps: list[int] | None = None,
    ) -> None:
        """Append JSON-with-schema values (None: a tombstone) to partition 0 of `topic`."""
        if topic not in self.log.list_topics():
            self.log.create_topic(topic, 1)
        encoded = [
            None if v is None else json.dumps({"schema": schema, "payload": v}).encode()
            for v in values
        ]
        self.log.append(topic, 0, encoded, keys=keys, timestamps=timestamps)

    def records(self, topic: str) -> list[Any]:
        if topic not in self.log.list_topics():
            return []
        out: list[Any] = []
        for partition in range(self.log.partition_count(topic)):
            offset = 0
            while batch := self.log.read(topic, partition, offset):
                out += batch
                offset = batch[-1].offset + 1
        return out

    def values(self, topic: str) -> list[Any]:
        return [json.loads(r.value)["payload"] for r in self.records(topic)]

    def mysql_rows(self, table: str, order: str = "1") -> list[dict[str, Any]] | None:
        assert self.site.mysql is not None
        host, port, database, user, password = self.site.mysql
        return _rows(f"mysql+pymysql://{user}:{password}@{host}:{port}/{database}", table, order)

    def mysql_execute(self, *statements: str) -> None:
        server = self.request.getfixturevalue("mysql_server")
        server.execute(*(s.replace("{db}", self.site.mysql[2]) for s in statements))  # type: ignore[index]

    def pg_execute(self, *statements: str) -> None:
        import psycopg2

        assert self.site.postgres is not None
        host, port, database, user, password = self.site.postgres
        conn = psycopg2.connect(host=host, port=port, user=user, password=password, dbname=database)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                for sql in statements:
                    cur.execute(sql)
        finally:
            conn.close()

    def pg_rows(
        self, table: str, order: str = "1", schema: str = ""
    ) -> list[dict[str, Any]] | None:
        assert self.site.postgres is not None
        host, port, database, user, password = self.site.postgres
        url = f"postgresql+psycopg2://{user}:{password}@{host}:{port}/{database}"
        return _rows(url, table, order, schema)

    def failed(self, name: str) -> str | None:
        status = self.herder.connector_status(name)
        for task in status.tasks:
            if task.state == "FAILED":
                return task.trace
        return status.trace if status.state == "FAILED" else None

    def wait(
        self, name: str, predicate: Callable[[], Any], what: str, timeout_s: float = 30
    ) -> Any:
        """The predicate's first truthy result; a failed connector or task fails at once
        with its trace."""

        def check() -> Any:
            trace = self.failed(name)
            assert trace is None, f"{name} failed: {trace}"
            return predicate()

        return wait_until(check, timeout_s, what)


def _rows(url: str, table: str, order: str, schema: str = "") -> list[dict[str, Any]] | None:
    """The rows of `table` (in `schema`, else the default one), None while it is missing."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(table, schema=schema or None):
                return None
            quote = conn.dialect.identifier_preparer.quote
            q = f"{quote(schema)}.{quote(table)}" if schema else quote(table)
            result = conn.exec_driver_sql(f"SELECT * FROM {q} ORDER BY {order}")
            return [dict(r._mapping) for r in result]
    finally:
        engine.dispose()


@pytest.fixture
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Run]]:
    """`run(mysql=True, postgres=True, s3=True)`: a herder on tmp_path/log and a Site with
    the servers the case needs (a fresh database or bucket each). The worker's key
    converter is demo-scene's StringConverter, or `keys=JSON` as Debezium's images set
    it (CONNECT_KEY_CONVERTER) for the Debezium examples."""
    from connect.worker.config import WORKER_CONFIG

    started: list[StandaloneHerder] = []
    cleanups: list[Callable[[], None]] = []  # after the herders stop, last first

    def factory(
        *, mysql: bool = False, postgres: bool = False, s3: bool = False, keys: str = STRING
    ) -> Run:
        site = Site(directory=tmp_path)
        if mysql:
            server = request.getfixturevalue("mysql_server")
            from tests.mysql import PASSWORD, SUPERUSER

            db = server.create_database()
            cleanups.append(lambda: server.drop_database(db))
            site = Site(tmp_path, mysql=("127.0.0.1", server.port, db, SUPERUSER, PASSWORD))
        if postgres:
            pg = request.getfixturevalue("postgres_server")
            name = pg.create_database()
            role = f"conformance_{name}"
            pg.execute(f"CREATE ROLE {role} LOGIN SUPERUSER REPLICATION PASSWORD 'pw-{name}'")

            def drop() -> None:
                pg.execute(
                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                    f"WHERE database = '{name}'"
                )
                pg.drop_database(name)
                pg.execute(f"DROP ROLE IF EXISTS {role}")

            cleanups.append(drop)
            site = Site(tmp_path, site.mysql, ("127.0.0.1", pg.port, name, role, f"pw-{name}"))
        if s3:
            bucket = request.getfixturevalue("s3_bucket")
            site = Site(tmp_path, site.mysql, site.postgres, bucket.props)
        raw = {
            "log.dir": str(tmp_path / "log"),
            "offset.flush.interval.ms": "100",
            "task.isolation": "thread",
            "key.converter": keys,
            "value.converter": JSON,
        }
        herder = StandaloneHerder(
            {**raw, **WORKER_CONFIG.parse(raw)}, log=FileLog(tmp_path / "log"), worker_id="w1"
        )
        herder.start()
        started.append(herder)
        return Run(herder, site, request)

    yield factory
    for herder in started:
        herder.stop()
        herder.log.close()
    for cleanup in reversed(cleanups):
        cleanup()


# ------------------------------------------------------------------------------ cases
# Each case: feed what the config reads, start it as published (localized), wait for
# the outcome, assert it.


def kafka_file_source(run: Callable[..., Run]) -> None:
    r = run()
    (r.site.directory / "test.txt").write_text("foo\nbar\n")
    r.start("connect-file-source.properties")
    r.wait("local-file-source", lambda: r.values("connect-test") == ["foo", "bar"], "2 lines")


def kafka_file_sink(run: Callable[..., Run]) -> None:
    r = run()
    r.produce("connect-test", {"type": "string"}, ["foo", "bar", "x=1, é"])
    r.start("connect-file-sink.properties")
    sink = r.site.directory / "test.sink.txt"
    r.wait(
        "local-file-sink",
        lambda: sink.exists() and sink.read_text(encoding="utf-8") == "foo\nbar\nx=1, é\n",
        "3 lines in test.sink.txt",
    )


def kafka_docs_file_source_transforms(run: Callable[..., Run]) -> None:
    r = run()
    (r.site.directory / "test.txt").write_text("foo\nbar\n")
    r.start("kafka-docs/connect-file-source-transforms.properties")
    expected = [{"line": s, "data_source": "test-file-source"} for s in ("foo", "bar")]
    r.wait("local-file-source", lambda: r.values("connect-test") == expected, "2 maps")


def jdbc_source_quickstart_sqlite(run: Callable[..., Run]) -> None:
    # Confluent's quickstart: sqlite3 test.db, CREATE TABLE accounts, two INSERTs
    r = run()
    conn = sqlite3.connect(r.site.directory / "test.db")
    with conn:
        conn.execute(
            "CREATE TABLE accounts(id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, "
            "name VARCHAR(255))"
        )
        conn.executemany("INSERT INTO accounts(name) VALUES(?)", [("alice",), ("bob",)])
    conn.close()
    r.start("jdbc/source-quickstart-sqlite.properties")
    expected = [{"id": 1, "name": "alice"}, {"id": 2, "name": "bob"}]
    r.wait(
        "test-source-sqlite-jdbc-autoincrement",
        lambda: r.values("test-sqlite-jdbc-accounts") == expected,
        "2 accounts",
    )


def jdbc_sink_quickstart_sqlite(run: Callable[..., Run]) -> None:
    # Confluent's quickstart produces {"id": 999, "product": "foo", "quantity": 100,
    # "price": 50} to `orders` with an Avro schema; the same record with a JSON one
    r = run()
    schema = schema_of(
        {"id": "int32", "product": "string", "quantity": "int32", "price": "float"},
        name="myrecord",
    )
    r.produce("orders", schema, [{"id": 999, "product": "foo", "quantity": 100, "price": 50}])
    r.start("jdbc/sink-quickstart-sqlite.properties")
    url = f"sqlite:///{r.site.directory / 'test.db'}"
    rows = r.wait("test-sink", lambda: _rows(url, "orders", "id"), "the orders table")
    assert rows == [{"id": 999, "product": "foo", "quantity": 100, "price": 50.0}]


def s3_quickstart(run: Callable[..., Run]) -> None:
    # flush.size=10000: the first object holds records 0..9999, in Avro
    r = run(s3=True)
    r.produce(
        "s3_topic",
        schema_of({"f1": "string"}, name="myrecord"),
        [{"f1": f"value{i}"} for i in range(10_000)],
    )
    r.start("s3/quickstart-s3.properties")
    bucket = r.request.getfixturevalue("s3_bucket")
    key = "topics/s3_topic/partition=0/s3_topic+0+0000000000.avro"
    r.wait("s3-sink", lambda: key in bucket.keys("topics/"), key, timeout_s=60)
    import io

    import fastavro

    got = list(fastavro.reader(io.BytesIO(bucket.get(key))))
    assert [g["f1"] for g in got] == [f"value{i}" for i in range(10_000)]


def hdfs_quickstart(run: Callable[..., Run]) -> None:
    # flush.size=3: nine records are three files under <hdfs.url>/topics/test_hdfs
    r = run()
    r.request.getfixturevalue("spark")  # the suite's one SparkSession, which the sink joins
    schema = schema_of({"f1": "string"}, name="myrecord")
    r.produce("test_hdfs", schema, [{"f1": f"value{i}"} for i in range(9)])
    r.start("hdfs/quickstart-hdfs.properties")
    topic_dir = r.site.directory / "hdfs" / "topics" / "test_hdfs"

    def files() -> list[Path]:
        found = sorted(topic_dir.rglob("*.parquet")) if topic_dir.exists() else []
        return found if len(found) >= 3 else []

    written = r.wait("hdfs-sink", files, "three Parquet files", timeout_s=90)
    import pyarrow.parquet as pq

    values = [v for f in written for v in pq.read_table(f).column("f1").to_pylist()]
    assert sorted(values) == sorted(f"value{i}" for i in range(9))


def demo_day1_insert_ts_mysql(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    stamps = [1_600_000_000_000 + i * 1000 for i in range(5)]
    r.produce("transactions", TXN, [txn(i) for i in range(5)], timestamps=stamps)
    r.start("demo-scene/day1-L152-sink-jdbc-mysql-00.json")
    rows = r.wait("sink-jdbc-mysql-00", lambda: _n(r.mysql_rows("transactions"), 5), "5 rows")
    assert [row["messageTS"].replace(tzinfo=UTC) for row in rows] == [
        datetime.fromtimestamp(s / 1000, UTC) for s in stamps
    ]


def demo_day1_insert_format_ts_s3(run: Callable[..., Run]) -> None:
    # flush.size=16, JsonFormat; messageTS as "yyyy-MM-dd HH:mm:ss:SSS"
    r = run(s3=True)
    r.log.create_topic("customers", 1)  # the config's other topic, empty here
    stamps = [1_600_000_000_123 + i for i in range(16)]
    r.produce("transactions", TXN, [txn(i) for i in range(16)], timestamps=stamps)
    r.start("demo-scene/day1-L199-sink-s3-00.json")
    bucket = r.request.getfixturevalue("s3_bucket")
    key = "topics/transactions/partition=0/transactions+0+0000000000.json"
    r.wait("sink-s3-00", lambda: key in bucket.keys("topics/"), key)
    lines = [json.loads(x) for x in bucket.get(key).decode().splitlines()]
    assert [x["messageTS"] for x in lines] == [
        f"2020-09-13 12:26:40:{123 + i:03d}" for i in range(16)
    ]
    assert lines[0]["item"] == "Beer 0"


def _customers_mysql(r: Run) -> None:
    r.mysql_execute(
        "CREATE TABLE `{db}`.customers (id INT PRIMARY KEY AUTO_INCREMENT, "
        "first_name VARCHAR(50), last_name VARCHAR(50))",
        "INSERT INTO `{db}`.customers (first_name, last_name) VALUES "
        "('Rica', 'Blaisdell'), ('Ruthie', 'Brockherst')",
    )


def demo_day2_value_to_key(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    _customers_mysql(r)
    r.start("demo-scene/day2-L158-source-jdbc-mysql-01.json")
    records = r.wait(
        "source-jdbc-mysql-01", lambda: _n(r.records("mysql-01-customers"), 2), "2 records"
    )
    # StringConverter writes a Struct key as Kafka's Struct.toString() does
    assert [rec.key for rec in records] == [b"Struct{id=1}", b"Struct{id=2}"]


def demo_day2_value_to_key_extract(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    _customers_mysql(r)
    r.start("demo-scene/day2-L239-source-jdbc-mysql-02.json")
    records = r.wait(
        "source-jdbc-mysql-02", lambda: _n(r.records("mysql-02-customers"), 2), "2 records"
    )
    assert [rec.key for rec in records] == [b"1", b"2"]
    assert json.loads(records[0].value)["payload"]["first_name"] == "Rica"


ADDRESS = {
    "type": "struct",
    "optional": True,
    "fields": [
        {"field": f, "type": "string", "optional": True}
        for f in ("STREET", "CITY", "COUNTY_OR_STATE", "ZIP_OR_POSTCODE")
    ],
}
CUSTOMER = schema_of({"FULL_NAME": "string", "ADDRESS": ADDRESS})
CUSTOMERS = [
    {
        "FULL_NAME": "Opossum, american virginia",
        "ADDRESS": {
            "STREET": "20 Acker Terrace",
            "CITY": "Lynchburg",
            "COUNTY_OR_STATE": "Virginia",
            "ZIP_OR_POSTCODE": "24515",
        },
    },
    {
        "FULL_NAME": "Red deer",
        "ADDRESS": {
            "STREET": "53 Basil Terrace",
            "CITY": "Lexington",
            "COUNTY_OR_STATE": "Kentucky",
            "ZIP_OR_POSTCODE": "40515",
        },
    },
]
FLAT = [
    {
        "FULL_NAME": c["FULL_NAME"],
        **{f"ADDRESS_{k}": v for k, v in c["ADDRESS"].items()},  # type: ignore[attr-defined]
    }
    for c in CUSTOMERS
]


def demo_day3_nested_fails_as_published(run: Callable[..., Run]) -> None:
    # "This fails! You'll see the error …(STRUCT) type doesn't have a mapping to the SQL
    # database column type": the tutorial's first attempt, before Flatten. It fails here
    # too, at once and saying which field and type, and writes nothing.
    r = run(mysql=True)
    r.produce("day3-customersa", CUSTOMER, CUSTOMERS, keys=[b"1", b"3"])
    name = r.start("demo-scene/day3-L87-sink-jdbc-mysql-day3-customers-00.json")
    trace = wait_until(lambda: r.failed(name), 30, f"{name} failed")
    assert "ADDRESS" in trace and "STRUCT" in trace.upper(), trace
    assert r.mysql_rows("day3-customersa") is None


def demo_day3_flatten(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    r.produce("day3-customers", CUSTOMER, CUSTOMERS, keys=[b"1", b"3"])
    r.start("demo-scene/day3-L116-sink-jdbc-mysql-day3-customers-00.json")
    rows = r.wait(
        "sink-jdbc-mysql-day3-customers-00",
        lambda: _n(r.mysql_rows("day3-customers", "FULL_NAME"), 2),
        "2 rows",
    )
    assert rows == FLAT


def demo_day3_flatten_record_key(run: Callable[..., Run]) -> None:
    # ksqlDB's BIGINT key, read with the config's own LongConverter
    r = run(mysql=True)
    keys = [struct.pack(">q", k) for k in (1, 3)]
    r.produce("day3-customers2", CUSTOMER, CUSTOMERS, keys=keys)
    r.start("demo-scene/day3-L174-sink-jdbc-mysql-day3-customers-02.json")
    rows = r.wait(
        "sink-jdbc-mysql-day3-customers-02",
        lambda: _n(r.mysql_rows("day3-customers2", "id"), 2),
        "2 rows",
    )
    assert rows == [{"id": k, **f} for k, f in zip((1, 3), FLAT, strict=True)]


def _txn_sink(r: Run, topic: str, config: str, table: str, count: int = 4) -> list[dict]:
    r.produce(topic, TXN, [txn(i) for i in range(count)])
    name = r.start(config)
    return r.wait(name, lambda: _n(r.mysql_rows(table), count), f"{count} rows in {table}")


def demo_day4_drop_prefix(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day4-transactions",
        "demo-scene/day4-L125-sink-jdbc-mysql-day4-transactions-00.json",
        "transactions",
    )
    assert [row["item"] for row in rows] == [f"Beer {i}" for i in range(4)]


def demo_day4_regex_groups(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day4-transactions",
        "demo-scene/day4-L169-sink-jdbc-mysql-day4-transactions-00.json",
        "transactions_day4",
    )
    assert rows[0] == txn(0)


def demo_day5_mask_field(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    person = schema_of(
        {
            "firstName": "string",
            "lastName": "string",
            "fullAddress": "string",
            "phone_num": "string",
        }
    )
    people = [
        {
            "firstName": f"F{i}",
            "lastName": f"L{i}",
            "fullAddress": f"{i} Main St",
            "phone_num": f"555-{i}",
        }
        for i in range(3)
    ]
    r.produce("day5-01-person", person, people)
    r.start("demo-scene/day5-L188-sink-jdbc-mysql-day5-person-01.json")
    rows = r.wait(
        "sink-jdbc-mysql-day5-person-01",
        lambda: _n(r.mysql_rows("day5-01-person", "firstName"), 3),
        "3 rows",
    )
    assert [row["fullAddress"] for row in rows] == ["[❌redacted❌]"] * 3
    assert [row["phone_num"] for row in rows] == ["555-0", "555-1", "555-2"]


def demo_day6_insert_metadata(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day6-transactions",
        "demo-scene/day6-L106-sink-jdbc-mysql-day6-00.json",
        "day6-transactions",
    )
    assert [(x["kafkaTopic"], x["kafkaPartition"], x["kafkaOffset"]) for x in rows] == [
        ("day6-transactions", 0, i) for i in range(4)
    ]


def demo_day7_timestamp_router(run: Callable[..., Run]) -> None:
    # "YYYY-MM-dd": Java's week-based year, the calendar year in mid-June
    r = run(mysql=True)
    at = int(datetime(2021, 6, 15, 12, tzinfo=UTC).timestamp() * 1000)
    r.produce("day7-transactions", TXN, [txn(i) for i in range(3)], timestamps=[at] * 3)
    r.start("demo-scene/day7-L69-sink-jdbc-mysql-day7-00.json")
    table = "day7-transactions_2021-06-15"
    rows = r.wait("sink-jdbc-mysql-day7-00", lambda: _n(r.mysql_rows(table), 3), table)
    assert rows[2]["item"] == "Beer 2"


def demo_day8_to_timestamp(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day8-transactions",
        "demo-scene/day8-L139-sink-jdbc-mysql-day8-01.json",
        "day8-transactions_withTS",
    )
    assert rows[1]["txn_date"] == datetime(2020, 12, 2, 7, 59, 52)


def demo_day8_to_date(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day8-transactions",
        "demo-scene/day8-L184-sink-jdbc-mysql-day8-02.json",
        "day8-transactions_withDate",
    )
    assert rows[1]["txn_date"] == date(2020, 12, 2)


def demo_day8_to_unix(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day8-transactions",
        "demo-scene/day8-L300-sink-jdbc-mysql-day8-04.json",
        "day8-transactions_withUnixEpoch",
    )
    at = datetime(2020, 12, 2, 7, 59, 52, tzinfo=UTC)
    assert rows[1]["txn_date"] == int(at.timestamp()) * 1000


def demo_day10_route_all(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day10-transactions",
        "demo-scene/day10-L74-sink-jdbc-mysql-day10-00.json",
        "production_data",
    )
    assert rows[3] == txn(3)


def demo_day10_drop_fields(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day10-transactions",
        "demo-scene/day10-L121-sink-jdbc-mysql-day10-01.json",
        "day10-transactions",
    )
    assert set(rows[0]) == {"item", "cost", "units", "txn_date"}


def demo_day10_source_include(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    r.mysql_execute(
        "CREATE TABLE `{db}`.production_data (item TEXT, cost TEXT, units TEXT, "
        "card_type TEXT, cc_num TEXT, cc_exp TEXT, txn_date TEXT)",
        "INSERT INTO `{db}`.production_data VALUES "
        "('Beer 0', '0.50', '1', 'visa', '4111-0000', '12/30', 'Wed Dec 01 07:59:52 GMT 2020')",
    )
    r.start("demo-scene/day10-L182-source-jdbc-mysql-day10-00.json")
    values = r.wait(
        "source-jdbc-mysql-day10-00", lambda: r.values("day10-production_data"), "a record"
    )
    assert values[0] == {
        "item": "Beer 0",
        "cost": "0.50",
        "units": "1",
        "txn_date": "Wed Dec 01 07:59:52 GMT 2020",
    }


def demo_day10_rename(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    rows = _txn_sink(
        r,
        "day10-production_data",
        "demo-scene/day10-L228-sink-jdbc-mysql-day10-02.json",
        "day10-production_data",
    )
    assert rows[0]["transaction_timestamp"] == txn(0)["txn_date"]
    assert "txn_date" not in rows[0]


def demo_day11_predicate_rename(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    sys01 = schema_of({"product": "string", "amount": "string", "source": "string"})
    sys_b = schema_of({"item": "string", "cost": "string", "source": "string"})
    r.produce("day11-sys01", sys01, [{"product": "Stout", "amount": "1.00", "source": "SYS01"}])
    r.produce("day11-systemB", sys_b, [{"item": "Porter", "cost": "2.00", "source": "SYSTEM_B"}])
    r.start("demo-scene/day11-L148-sink-jdbc-mysql-day11-00.json")
    rows = r.wait(
        "sink-jdbc-mysql-day11-00",
        lambda: _n(r.mysql_rows("transactions", "source"), 2),
        "2 rows in transactions",
    )
    assert rows == [
        {"product": "Stout", "amount": "1.00", "source": "SYS01"},
        {"product": "Porter", "amount": "2.00", "source": "SYSTEM_B"},
    ]


def demo_day11_filter_tombstones(run: Callable[..., Run]) -> None:
    r = run(mysql=True)
    sys02 = schema_of({"product": "string", "amount": "string", "source": "string"})
    values = [
        None if i % 3 == 1 else {"product": f"P{i}", "amount": f"{i}", "source": "SYS02"}
        for i in range(9)
    ]
    r.produce("sys02", sys02, values, keys=[f"k{i}".encode() for i in range(9)])
    r.start("demo-scene/day11-L259-sink-jdbc-mysql-day11-01.json")
    rows = r.wait("sink-jdbc-mysql-day11-01", lambda: _n(r.mysql_rows("sys02", "amount"), 6), "6")
    assert [row["product"] for row in rows] == [f"P{i}" for i in range(9) if i % 3 != 1]


INVENTORY = (
    "CREATE SCHEMA inventory",
    "CREATE TABLE inventory.customers (id SERIAL PRIMARY KEY, first_name VARCHAR(255) "
    "NOT NULL, last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE)",
    "INSERT INTO inventory.customers (first_name, last_name, email) VALUES "
    "('Sally', 'Thomas', 'sally.thomas@acme.com'), ('George', 'Bailey', 'gbailey@foobar.com')",
)


def debezium_toast_pipeline(run: Callable[..., Run]) -> None:
    # postgres-toast's pipeline: the tutorial's source, and this sink writing the
    # customers into an existing table of another schema (currentSchema=inventorysink,
    # auto.create=false); a change and a delete at the source follow
    r = run(postgres=True, keys=JSON)
    r.pg_execute(
        *INVENTORY,
        "CREATE SCHEMA inventorysink",
        "CREATE TABLE inventorysink.customers (id INT PRIMARY KEY, first_name VARCHAR(255), "
        "last_name VARCHAR(255), email VARCHAR(255))",
    )
    r.start("debezium/tutorial-register-postgres.json")
    name = r.start("debezium/postgres-toast-jdbc-sink.json")

    def emails(expected: list[str]) -> Callable[[], Any]:
        def check() -> Any:
            rows = r.pg_rows("customers", "id", schema="inventorysink")
            return rows if rows and [x["email"] for x in rows] == expected else None

        return check

    r.wait(name, emails(["sally.thomas@acme.com", "gbailey@foobar.com"]), "the snapshot")
    r.pg_execute(
        "UPDATE inventory.customers SET email = 'sally@acme.com' WHERE id = 1",
        "DELETE FROM inventory.customers WHERE id = 2",
    )
    rows = r.wait(name, emails(["sally@acme.com"]), "the update and the delete")
    assert rows == [
        {"id": 1, "first_name": "Sally", "last_name": "Thomas", "email": "sally@acme.com"}
    ]


def debezium_cqrs_unwrap_source(run: Callable[..., Run]) -> None:
    # ExtractNewRecordState on the source side, with add.fields=table
    r = run(postgres=True, keys=JSON)
    r.pg_execute(
        "CREATE TABLE public.pollentity (id BIGINT PRIMARY KEY, question TEXT)",
        "CREATE TABLE public.optionentity (id BIGINT PRIMARY KEY, text TEXT)",
        "CREATE TABLE public.other (id BIGINT PRIMARY KEY)",
        "INSERT INTO public.pollentity VALUES (1, 'Tabs or spaces?')",
        "INSERT INTO public.optionentity VALUES (7, 'tabs')",
        "INSERT INTO public.other VALUES (1)",
    )
    name = r.start("debezium/cqrs-postgres-source-unwrap.json")
    polls = r.wait(name, lambda: r.values("polls.public.pollentity"), "the poll")
    options = r.wait(name, lambda: r.values("polls.public.optionentity"), "the option")
    assert polls == [{"id": 1, "question": "Tabs or spaces?", "__table": "pollentity"}]
    assert options == [{"id": 7, "text": "tabs", "__table": "optionentity"}]
    assert "polls.public.other" not in r.log.list_topics()


def debezium_live_update_source(run: Callable[..., Run]) -> None:
    # Debezium 1.x keys: database.server.name, table.whitelist, database.history.*
    r = run(postgres=True, keys=JSON)
    r.pg_execute(
        *INVENTORY,
        "CREATE TABLE inventory.categories (id INT PRIMARY KEY, name TEXT)",
        "CREATE TABLE inventory.orders (id INT PRIMARY KEY, category_id INT, quantity INT)",
        "INSERT INTO inventory.categories VALUES (1, 'books')",
        "INSERT INTO inventory.orders VALUES (10, 1, 3)",
    )
    name = r.start("debezium/kstreams-live-update-pgsql-source.json")
    orders = r.wait(name, lambda: r.values("dbserver1.inventory.orders"), "the order")
    r.pg_execute("INSERT INTO inventory.orders VALUES (11, 1, 5)")
    orders = r.wait(name, lambda: _n(r.values("dbserver1.inventory.orders"), 2), "a new order")
    assert [(o["op"], o["after"]) for o in orders] == [
        ("r", {"id": 10, "category_id": 1, "quantity": 3}),
        ("c", {"id": 11, "category_id": 1, "quantity": 5}),
    ]
    assert r.values("dbserver1.inventory.categories")[0]["after"] == {"id": 1, "name": "books"}
    assert "dbserver1.inventory.customers" not in r.log.list_topics()


def debezium_tutorial_postgres(run: Callable[..., Run]) -> None:
    # Debezium's tutorial database: the inventory schema's customers table
    r = run(postgres=True, keys=JSON)
    r.pg_execute(
        "CREATE SCHEMA inventory",
        "CREATE TABLE inventory.customers (id SERIAL PRIMARY KEY, first_name VARCHAR(255) "
        "NOT NULL, last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE)",
        "INSERT INTO inventory.customers (first_name, last_name, email) VALUES "
        "('Sally', 'Thomas', 'sally.thomas@acme.com'), ('George', 'Bailey', 'gbailey@foobar.com')",
        "CREATE TABLE public.other (id INT PRIMARY KEY)",
        "INSERT INTO public.other VALUES (1)",
    )
    r.start("debezium/tutorial-register-postgres.json")
    topic = "dbserver1.inventory.customers"
    values = r.wait("inventory-connector", lambda: _n(r.values(topic), 2), topic)
    assert [(v["op"], v["after"]["email"]) for v in values] == [
        ("r", "sally.thomas@acme.com"),
        ("r", "gbailey@foobar.com"),
    ]
    r.pg_execute("UPDATE inventory.customers SET email = 'sally@acme.com' WHERE id = 1")
    values = r.wait("inventory-connector", lambda: _n(r.values(topic), 3), "the update")
    assert (values[2]["op"], values[2]["after"]["email"]) == ("u", "sally@acme.com")
    # schema.whitelist=inventory: nothing from public
    assert not [t for t in r.log.list_topics() if t.startswith("dbserver1.public.")]


def debezium_unwrap_jdbc_sink(run: Callable[..., Run]) -> None:
    # Debezium change events for `customers` (as its MySQL source, routed by RegexRouter,
    # writes them): two creates, an update, a delete and its tombstone
    r = run(postgres=True, keys=JSON)
    row = {"id": "int32", "first_name": "string", "last_name": "string", "email": "string"}
    row_schema = schema_of(row, name="dbserver1.inventory.customers.Value") | {"optional": True}
    envelope = schema_of(
        {"before": row_schema, "after": row_schema, "op": "string", "ts_ms": "int64"},
        name="dbserver1.inventory.customers.Envelope",
    )
    key_schema = schema_of({"id": "int32"}, name="dbserver1.inventory.customers.Key")

    def person(i: int, email: str) -> dict[str, Any]:
        return {"id": i, "first_name": f"F{i}", "last_name": f"L{i}", "email": email}

    events = [
        (1001, {"before": None, "after": person(1001, "a@x"), "op": "c", "ts_ms": 1}),
        (1002, {"before": None, "after": person(1002, "b@x"), "op": "c", "ts_ms": 2}),
        (
            1001,
            {"before": person(1001, "a@x"), "after": person(1001, "a2@x"), "op": "u", "ts_ms": 3},
        ),
        (1002, {"before": person(1002, "b@x"), "after": None, "op": "d", "ts_ms": 4}),
        (1002, None),
    ]
    keys = [json.dumps({"schema": key_schema, "payload": {"id": k}}).encode() for k, _ in events]
    r.produce("customers", envelope, [v for _, v in events], keys=keys)
    name = r.start("debezium/unwrap-smt-jdbc-sink.json")

    def final() -> Any:
        rows = r.pg_rows("customers", "id")
        return rows if rows and [x["id"] for x in rows] == [1001] else None

    rows = r.wait(name, final, "customers with 1001 updated and 1002 deleted")
    assert rows == [person(1001, "a2@x")]


MYSQL_INVENTORY = (
    "DROP DATABASE IF EXISTS inventory",
    "CREATE DATABASE inventory",
    "CREATE TABLE inventory.customers (id INT AUTO_INCREMENT PRIMARY KEY, first_name "
    "VARCHAR(255) NOT NULL, last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT NULL "
    "UNIQUE) AUTO_INCREMENT = 1001",
    "INSERT INTO inventory.customers (first_name, last_name, email) VALUES "
    "('Sally', 'Thomas', 'sally.thomas@acme.com'), ('George', 'Bailey', 'gbailey@foobar.com')",
    "CREATE TABLE {db}.other (id INT PRIMARY KEY)",  # the site's own database
    "INSERT INTO {db}.other VALUES (1)",
)


def _mysql_inventory(r: Run) -> None:
    """Debezium's tutorial database on the test MariaDB: the published filters name
    `inventory` (a database name, kept by localize()), so the case makes it."""
    r.mysql_execute(*MYSQL_INVENTORY)
    server = r.request.getfixturevalue("mysql_server")
    r.request.addfinalizer(lambda: server.drop_database("inventory"))


def _tutorial_mysql(run: Callable[..., Run], file: str) -> None:
    r = run(mysql=True, keys=JSON)
    _mysql_inventory(r)
    name = r.start(file)
    topic = "dbserver1.inventory.customers"
    values = r.wait(name, lambda: _n(r.values(topic), 2), topic)
    assert [(v["op"], v["after"]["id"], v["after"]["email"]) for v in values] == [
        ("r", 1001, "sally.thomas@acme.com"),
        ("r", 1002, "gbailey@foobar.com"),
    ]
    r.mysql_execute("UPDATE inventory.customers SET email = 'sally@acme.com' WHERE id = 1001")
    values = r.wait(name, lambda: _n(r.values(topic), 3), "the update")
    update = values[2]
    assert (update["op"], update["before"]["email"], update["after"]["email"]) == (
        "u", "sally.thomas@acme.com", "sally@acme.com"
    )
    assert (update["source"]["db"], update["source"]["table"]) == ("inventory", "customers")
    # database.include.list=inventory: nothing of the site's own database
    own = f"dbserver1.{r.site.mysql[2]}."  # type: ignore[index]
    assert not [t for t in r.log.list_topics() if t.startswith(own)]


def debezium_tutorial_mysql(run: Callable[..., Run]) -> None:
    # MySqlConnector on MariaDB: Tributary's source reads both
    _tutorial_mysql(run, "debezium/tutorial-register-mysql.json")


def debezium_tutorial_mariadb(run: Callable[..., Run]) -> None:
    _tutorial_mysql(run, "debezium/tutorial-register-mariadb.json")


def debezium_unwrap_mysql_source(run: Callable[..., Run]) -> None:
    # the unwrap-smt example's source: RegexRouter keeps the table name as the topic
    r = run(mysql=True, keys=JSON)
    _mysql_inventory(r)
    name = r.start("debezium/unwrap-smt-source.json")
    values = r.wait(name, lambda: _n(r.values("customers"), 2), "the customers")
    r.mysql_execute(
        "INSERT INTO inventory.customers (first_name, last_name, email) "
        "VALUES ('Edward', 'Walker', 'ed@walker.com')"
    )
    values = r.wait(name, lambda: _n(r.values("customers"), 3), "the insert")
    assert [(v["op"], v["after"]["id"]) for v in values] == [("r", 1001), ("r", 1002), ("c", 1003)]
    assert "dbserver1.inventory.customers" not in r.log.list_topics()


def demo_connect_jdbc_postgres_bulk(run: Callable[..., Run]) -> None:
    # mode=bulk and no table list: every table of the database, once at the start
    r = run(postgres=True)
    r.pg_execute(
        "CREATE TABLE num_test (txn_id INT, customer_value NUMERIC(5, 2), note TEXT)",
        "INSERT INTO num_test VALUES (42, 1.23, 'first'), (43, 100.5, NULL)",
    )
    name = r.start("demo-scene/connect-jdbc-README-L79-jdbc_source_postgres_01.json")
    records = r.wait(name, lambda: _n(r.records("postgres-01-num_test"), 2), "two rows")
    payloads = [json.loads(rec.value) for rec in records]
    assert [(p["payload"]["txn_id"], p["payload"]["note"]) for p in payloads] == [
        (42, "first"),
        (43, None),
    ]
    # NUMERIC(5, 2) travels as Connect's Decimal, scale 2, as Confluent's source sends it
    decimal = next(f for f in payloads[0]["schema"]["fields"] if f["field"] == "customer_value")
    assert decimal["name"] == "org.apache.kafka.connect.data.Decimal"
    assert decimal["parameters"]["scale"] == "2"


def demo_rail_postgres_upsert(run: Callable[..., Run]) -> None:
    # String keys as MESSAGE_KEY (pk.mode=record_key), upserts, arrays and structs
    # dropped by ReplaceField before the table is made (auto.create as a JSON boolean)
    r = run(postgres=True)
    header = {
        "type": "struct",
        "optional": True,
        "fields": [{"field": "MSG_TYPE", "type": "string", "optional": True}],
    }
    locations = {
        "type": "array",
        "optional": True,
        "items": {"type": "string", "optional": True},
    }
    schema = schema_of(
        {
            "TRAIN_ID": "string",
            "CANC_REASON": "string",
            "HEADER": header,
            "SCHEDULE_SEGMENT_LOCATION": locations,
        }
    )

    def message(train: str, reason: str) -> dict[str, Any]:
        return {
            "TRAIN_ID": train,
            "CANC_REASON": reason,
            "HEADER": {"MSG_TYPE": "0002"},
            "SCHEDULE_SEGMENT_LOCATION": ["LDS", "YRK"],
        }

    topic = "TRAIN_CANCELLATIONS_ACTIVATIONS_SCHEDULE_00"
    r.produce(
        topic,
        schema,
        [message("1A01", "AA"), message("2B02", "YI"), message("1A01", "TG")],
        keys=[b"1A01", b"2B02", b"1A01"],
    )
    name = r.start(
        "demo-scene/rail-egress-postgres-L3-sink-jdbc-TRAIN_CANCELLATIONS_ACTIVATIONS_SCHEDULE_00.json"
    )

    def upserted() -> Any:
        rows = r.pg_rows(topic, '"MESSAGE_KEY"')
        return rows if rows and [x["CANC_REASON"] for x in rows] == ["TG", "YI"] else None

    rows = r.wait(name, upserted, "two trains, the first one's reason updated")
    assert rows == [
        {"MESSAGE_KEY": "1A01", "TRAIN_ID": "1A01", "CANC_REASON": "TG"},
        {"MESSAGE_KEY": "2B02", "TRAIN_ID": "2B02", "CANC_REASON": "YI"},
    ]


def _n(rows: list[Any] | None, count: int) -> list[Any] | None:
    """`rows` once there are `count` of them (more fails: nothing may be written twice)."""
    if rows is None or len(rows) < count:
        return None
    assert len(rows) == count, rows
    return rows


@dataclass(frozen=True)
class Case:
    file: str  # under tests/data/published
    source: str  # repository, path, commit (or page)
    body: Callable[[Callable[..., Run]], None]
    marks: tuple[pytest.MarkDecorator, ...] = ()
    # keys warned about as unknown, as Kafka Connect warns about them too
    unknown: tuple[str, ...] = ()


CASES = [
    Case(
        "connect-file-source.properties",
        KAFKA.format("config/connect-file-source.properties"),
        kafka_file_source,
    ),
    Case(
        "connect-file-sink.properties",
        KAFKA.format("config/connect-file-sink.properties"),
        kafka_file_sink,
    ),
    Case(
        "kafka-docs/connect-file-source-transforms.properties",
        KAFKA.format("docs/connect.html (Transformations)"),
        kafka_docs_file_source_transforms,
    ),
    Case(
        "jdbc/source-quickstart-sqlite.properties",
        JDBC.format("source-quickstart-sqlite.properties", "79a3ca14"),
        jdbc_source_quickstart_sqlite,
    ),
    Case(
        "jdbc/sink-quickstart-sqlite.properties",
        JDBC.format("sink-quickstart-sqlite.properties", "c24b067e"),
        jdbc_sink_quickstart_sqlite,
    ),
    Case(
        "s3/quickstart-s3.properties",
        "confluentinc/kafka-connect-storage-cloud "
        "kafka-connect-s3/config/quickstart-s3.properties @ 1bbf5cb2",
        s3_quickstart,
    ),
    Case(
        "demo-scene/connect-jdbc-README-L79-jdbc_source_postgres_01.json",
        DEMO_SCENE.format("connect-jdbc/README.adoc:79"),
        demo_connect_jdbc_postgres_bulk,
    ),
    Case(
        "demo-scene/rail-egress-postgres-L3-sink-jdbc-TRAIN_CANCELLATIONS_ACTIVATIONS_SCHEDULE_00.json",
        DEMO_SCENE.format("rail-data-streaming-pipeline/data/egress/postgres/00_create_sink.sh:3"),
        demo_rail_postgres_upsert,
    ),
    Case(
        "hdfs/quickstart-hdfs.properties",
        "confluentinc/kafka-connect-hdfs config/quickstart-hdfs.properties @ adf588a2",
        hdfs_quickstart,
        (pytest.mark.spark,),
    ),
    Case(
        "demo-scene/day1-L152-sink-jdbc-mysql-00.json",
        DEMO.format("day1.adoc:152"),
        demo_day1_insert_ts_mysql,
    ),
    Case(
        "demo-scene/day1-L199-sink-s3-00.json",
        DEMO.format("day1.adoc:199"),
        demo_day1_insert_format_ts_s3,
    ),
    Case(
        "demo-scene/day2-L158-source-jdbc-mysql-01.json",
        DEMO.format("day2.adoc:158"),
        demo_day2_value_to_key,
    ),
    Case(
        "demo-scene/day2-L239-source-jdbc-mysql-02.json",
        DEMO.format("day2.adoc:239"),
        demo_day2_value_to_key_extract,
    ),
    Case(
        "demo-scene/day3-L87-sink-jdbc-mysql-day3-customers-00.json",
        DEMO.format("day3.adoc:87"),
        demo_day3_nested_fails_as_published,
    ),
    Case(
        "demo-scene/day3-L116-sink-jdbc-mysql-day3-customers-00.json",
        DEMO.format("day3.adoc:116"),
        demo_day3_flatten,
    ),
    Case(
        "demo-scene/day3-L174-sink-jdbc-mysql-day3-customers-02.json",
        DEMO.format("day3.adoc:174"),
        demo_day3_flatten_record_key,
    ),
    Case(
        "demo-scene/day4-L125-sink-jdbc-mysql-day4-transactions-00.json",
        DEMO.format("day4.adoc:125"),
        demo_day4_drop_prefix,
    ),
    Case(
        "demo-scene/day4-L169-sink-jdbc-mysql-day4-transactions-00.json",
        DEMO.format("day4.adoc:169"),
        demo_day4_regex_groups,
    ),
    Case(
        "demo-scene/day5-L188-sink-jdbc-mysql-day5-person-01.json",
        DEMO.format("day5.adoc:188"),
        demo_day5_mask_field,
    ),
    Case(
        "demo-scene/day6-L106-sink-jdbc-mysql-day6-00.json",
        DEMO.format("day6.adoc:106"),
        demo_day6_insert_metadata,
    ),
    Case(
        "demo-scene/day7-L69-sink-jdbc-mysql-day7-00.json",
        DEMO.format("day7.adoc:69"),
        demo_day7_timestamp_router,
    ),
    Case(
        "demo-scene/day8-L139-sink-jdbc-mysql-day8-01.json",
        DEMO.format("day8.adoc:139"),
        demo_day8_to_timestamp,
    ),
    Case(
        "demo-scene/day8-L184-sink-jdbc-mysql-day8-02.json",
        DEMO.format("day8.adoc:184"),
        demo_day8_to_date,
    ),
    Case(
        "demo-scene/day8-L300-sink-jdbc-mysql-day8-04.json",
        DEMO.format("day8.adoc:300"),
        demo_day8_to_unix,
    ),
    Case(
        "demo-scene/day10-L74-sink-jdbc-mysql-day10-00.json",
        DEMO.format("day10.adoc:74"),
        demo_day10_route_all,
    ),
    Case(
        "demo-scene/day10-L121-sink-jdbc-mysql-day10-01.json",
        DEMO.format("day10.adoc:121"),
        demo_day10_drop_fields,
    ),
    Case(
        "demo-scene/day10-L182-source-jdbc-mysql-day10-00.json",
        DEMO.format("day10.adoc:182"),
        demo_day10_source_include,
        unknown=("table.include",),  # sic: Confluent's source warns too and copies all tables
    ),
    Case(
        "demo-scene/day10-L228-sink-jdbc-mysql-day10-02.json",
        DEMO.format("day10.adoc:228"),
        demo_day10_rename,
    ),
    Case(
        "demo-scene/day11-L148-sink-jdbc-mysql-day11-00.json",
        DEMO.format("day11.adoc:148"),
        demo_day11_predicate_rename,
    ),
    Case(
        "demo-scene/day11-L259-sink-jdbc-mysql-day11-01.json",
        DEMO.format("day11.adoc:259"),
        demo_day11_filter_tombstones,
    ),
]


CASES += [
    Case(
        "debezium/tutorial-register-postgres.json",
        DBZ.format("tutorial/register-postgres.json", "1f27ccd2"),
        debezium_tutorial_postgres,
    ),
    Case(
        "debezium/unwrap-smt-jdbc-sink.json",
        DBZ.format("unwrap-smt/jdbc-sink.json", "0ed297ab"),
        debezium_unwrap_jdbc_sink,
    ),
    Case(
        "debezium/postgres-toast-jdbc-sink.json",
        DBZ.format(
            "postgres-toast/jdbc-sink.json (with tutorial/register-postgres.json)", "54cb4456"
        ),
        debezium_toast_pipeline,
    ),
    Case(
        "debezium/cqrs-postgres-source-unwrap.json",
        DBZ.format("cqrs/postgres-source-unwrap.json", "69734ec7"),
        debezium_cqrs_unwrap_source,
    ),
    Case(
        "debezium/tutorial-register-mysql.json",
        DBZ.format("tutorial/register-mysql.json", "f455b47a"),
        debezium_tutorial_mysql,
    ),
    Case(
        "debezium/tutorial-register-mariadb.json",
        DBZ.format("tutorial/register-mariadb.json", "48efe291"),
        debezium_tutorial_mariadb,
    ),
    Case(
        "debezium/unwrap-smt-source.json",
        DBZ.format("unwrap-smt/source.json", "73feb7be"),
        debezium_unwrap_mysql_source,
    ),
    Case(
        "debezium/kstreams-live-update-pgsql-source.json",
        DBZ.format("kstreams-live-update/pgsql-source.json", "07a35b0b"),
        debezium_live_update_source,
        # Debezium's MySQL schema history keys: no key of its PostgreSQL connector either
        unknown=("database.history.kafka.bootstrap.servers", "database.history.kafka.topic"),
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.file, marks=c.marks) for c in CASES])
def test_published_config_runs_as_published(
    case: Case, run: Callable[..., Run], caplog: pytest.LogCaptureFixture
) -> None:
    """`case.source`, localized, does what its tutorial says it does, and no key of it is
    warned about as unknown but those Kafka Connect does not know either."""
    caplog.set_level(logging.WARNING, logger="connect")
    case.body(run)
    unknown = {
        m.group(1)
        for r in caplog.records
        if (
            m := re.search(
                r"the configuration '([^']+)' was supplied but isn't a known", r.getMessage()
            )
        )
    }
    assert unknown == set(case.unknown)


# Configs whose plugin Tributary does not ship: (file, source, the line of the refusal that
# names the missing plugin — Kafka Connect's own words — and why it is not here).
NOT_SHIPPED = [
    (
        "demo-scene/day1-L54-source-voluble-datagen-00.json",
        DEMO.format("day1.adoc:54"),
        "Failed to find any class that implements Connector and which name matches "
        "io.mdrogalis.voluble.VolubleSourceConnector",
        "a fake-data generator (Voluble); the tests append its records themselves",
    ),
    (
        "demo-scene/day7-L130-sink-jdbc-mysql-day7-00.json",
        DEMO.format("day7.adoc:130"),
        "transforms.addTimestampToTopicFromField.type: Invalid value "
        "io.confluent.connect.transforms.MessageTimestampRouter for configuration "
        "transforms.addTimestampToTopicFromField.type: Class "
        "io.confluent.connect.transforms.MessageTimestampRouter could not be found.",
        "Confluent's commercial transform (Confluent Platform licence)",
    ),
    (
        "demo-scene/day11-L288-sink-jdbc-mysql-day11-02.json",
        DEMO.format("day11.adoc:288"),
        "transforms.filterStout.type: Invalid value io.confluent.connect.transforms.Filter$Value "
        "for configuration transforms.filterStout.type: Class "
        "io.confluent.connect.transforms.Filter$Value could not be found.",
        "Confluent's commercial JSONPath filter; Kafka's Filter with a predicate is shipped",
    ),
    (
        "debezium/unwrap-smt-es-sink.json",
        DBZ.format("unwrap-smt/es-sink.json", "984fec42"),
        "Failed to find any class that implements Connector and which name matches "
        "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
        "an Elasticsearch sink",
    ),
    (
        "debezium/outbox-register-postgres.json",
        DBZ.format("outbox/register-postgres.json", "28dbebde"),
        "transforms.outbox.type: Invalid value io.debezium.transforms.outbox.EventRouter for "
        "configuration transforms.outbox.type: Class io.debezium.transforms.outbox.EventRouter "
        "could not be found.",
        "Debezium's outbox event router (its source, PostgresConnector, is shipped)",
    ),
]


@pytest.mark.parametrize(
    ("file", "source", "missing", "why"), NOT_SHIPPED, ids=[n[0] for n in NOT_SHIPPED]
)
def test_published_config_needing_a_plugin_we_do_not_ship_is_refused_clearly(
    file: str, source: str, missing: str, why: str, run: Callable[..., Run]
) -> None:
    """`source` needs a plugin we do not ship (`why`): refused at the door, before anything
    is stored, with Kafka Connect's message naming the class (and, for a transform, the
    key); no traceback, no config echoed."""
    r = run()
    name, config = load(file)
    from connect.herder.api import BadRequestError

    with pytest.raises(BadRequestError) as refused:
        r.herder.put_connector_config(name, config, allow_replace=True)
    message = str(refused.value)
    assert missing in message.split("\n"), message
    assert "Traceback" not in message and 'File "' not in message
    assert name not in r.herder.connectors()


def test_every_published_copy_is_run_or_listed() -> None:
    """No copy in tests/data/published is silently left out of the suite (Kafka's worker
    files are run by tests/integration/test_published_properties.py)."""
    covered = {c.file for c in CASES} | {n[0] for n in NOT_SHIPPED}
    workers = {
        "connect-standalone.properties",
        "connect-distributed.properties",
        "confluent/connect-avro-standalone.properties",  # test_published_workers.py
    }
    copies = {
        str(p.relative_to(PUBLISHED))
        for p in PUBLISHED.rglob("*")
        if p.suffix in (".json", ".properties") and str(p.relative_to(PUBLISHED)) not in workers
    }
    assert copies - covered == set()
