"""Importing a shipped connector and validating its config loads none of the heavy
libraries its task needs.

The worker's own process imports every connector class it validates or answers REST
calls about, while the task (in a process of its own by default) is the one that reads
a database or writes to S3. pyarrow with numpy is ~40 MB of a process's memory,
SQLAlchemy ~26 MB, boto3 ~24 MB, psycopg2 ~11 MB: loaded at import, they sat in the
worker's process too (a worker that had validated one PostgresCdcSource config was
123 MB instead of 57). Each case runs in a fresh interpreter, so nothing another test
imported hides a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pyarrow", "numpy", "sqlalchemy", "psycopg2", "boto3", "botocore", "pyspark")

_PROBE = """
import importlib, json, sys
module, name, props = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
connector = getattr(importlib.import_module(module), name)()
results = connector.validate(props)
if sys.argv[5] == "start":  # what a herder does next, in the same process
    connector.start(props)
    connector.task_configs(1)
print(json.dumps({
    "loaded": sorted(m for m in json.loads(sys.argv[4]) if m in sys.modules),
    "errors": {r.name: r.errors for r in results if r.errors},
}))
"""

JSON = "io.confluent.connect.s3.format.json.JsonFormat"
_PG_KEYS = {
    "database.hostname": "db.example.com",
    "database.port": "5432",
    "database.user": "cdc",
    "database.dbname": "shop",
    "topic.prefix": "srv",
    "table.include.list": "public\\.orders",
}

CASES = {
    # Debezium's keys, as the peers bench and most published configs give them: nothing.
    "postgres-cdc": (
        "connectors.postgres.source",
        "PostgresCdcSourceConnector",
        {"connector.class": "PostgresCdcSource", **_PG_KEYS},
        HEAVY,
    ),
    # A connection.url is translated into SQLAlchemy's URL (connectors.jdbc.urls), so
    # SQLAlchemy loads; the task's libraries still do not.
    "postgres-cdc-url": (
        "connectors.postgres.source",
        "PostgresCdcSourceConnector",
        {
            "connector.class": "PostgresCdcSource",
            "connection.url": "jdbc:postgresql://db.example.com:5432/shop",
            "database.user": "cdc",
            "topic.prefix": "srv",
        },
        ("pyarrow", "numpy", "psycopg2", "boto3", "pyspark"),
    ),
    "jdbc-sink": (
        "connectors.jdbc.sink",
        "JdbcSinkConnector",
        {"connection.url": "jdbc:postgresql://db.example.com/shop", "topics": "orders"},
        ("pyarrow", "numpy", "psycopg2", "boto3", "pyspark"),
    ),
    "s3-sink": (
        "connectors.s3.sink",
        "S3SinkConnector",
        {"s3.bucket.name": "lake", "topics": "orders", "flush.size": "100", "format.class": JSON},
        HEAVY,
    ),
    "s3-source": (
        "connectors.s3.source",
        "S3SourceConnector",
        {"s3.bucket.name": "lake", "topics": "orders", "format.class": JSON},
        HEAVY,
    ),
    # The connector builds a Partitioner to refuse a bad path.format: that too stays light.
    "spark-sink": (
        "connectors.spark.sink",
        "SparkParquetSinkConnector",
        {
            "topics": "orders",
            "store.url": "file:///lake",
            "flush.size": "100",
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "path.format": "'year'=YYYY/'month'=MM",
            "partition.duration.ms": "3600000",
            "locale": "en",
            "timezone": "UTC",
        },
        HEAVY,
    ),
    "file-source": (
        "connectors.file.source",
        "FileStreamSourceConnector",
        {"file": "/dev/null", "topic": "lines"},
        HEAVY,
    ),
}


#: validated and started (the connector, not its task) in the worker's process; the
#: others are validated only: their start may reach their store
STARTED = {"postgres-cdc", "spark-sink", "file-source"}


def probe(
    subprocess_env: dict[str, str],
    module: str,
    name: str,
    props: dict[str, str],
    *,
    start: bool = False,
) -> dict:
    step = "start" if start else "validate"
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, module, name, json.dumps(props), json.dumps(HEAVY), step],
        capture_output=True,
        text=True,
        env=subprocess_env,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out)


@pytest.mark.parametrize("case", sorted(CASES))
def test_validating_a_connector_loads_no_task_library(
    case: str, subprocess_env: dict[str, str]
) -> None:
    module, name, props, absent = CASES[case]
    got = probe(subprocess_env, module, name, props, start=case in STARTED)
    assert got["errors"] == {}
    assert [m for m in got["loaded"] if m in absent] == []


def test_a_cdc_config_is_still_checked_without_them(subprocess_env: dict[str, str]) -> None:
    """Light is not lax: a bad value is still refused by validate, naming its key."""
    module, name, props, _ = CASES["postgres-cdc"]
    got = probe(subprocess_env, module, name, {**props, "snapshot.mode": "sometimes"})
    assert list(got["errors"]) == ["snapshot.mode"]
    assert "psycopg2" not in got["loaded"] and "pyarrow" not in got["loaded"]


def test_listing_every_plugin_loads_no_task_library(subprocess_env: dict[str, str]) -> None:
    """GET /connector-plugins imports every connector class (it loaded all of them:
    +92 MB). The JDBC connectors' modules still import SQLAlchemy, their engine's
    library, which their validate needs anyway for the URL."""
    code = (
        "import json, sys\n"
        "from connect.plugins import Plugins\n"
        "listed = Plugins().connector_plugins()\n"
        f"print(json.dumps([len(listed), sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env,
        check=True,
        timeout=120,
    ).stdout
    count, loaded = json.loads(out)
    assert count >= 10 and loaded == ["sqlalchemy"]
