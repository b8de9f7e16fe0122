"""configs/connect-spark-parquet-sink.json runs as shipped beside the shipped SQLite
source (scripts/sqlite-demo-db's database): the shop's orders land in data/lake."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from connect.herder.standalone import StandaloneHerder
from connect.plugins import Plugins
from connect.standalone import load_connector_config, load_worker_config
from connectors.spark.sink import SparkParquetSinkConnector
from log import FileLog
from tests.conftest import ROOT
from tests.waiting import wait_until

CONFIGS = ROOT / "configs"


@pytest.mark.parametrize(
    "name",
    [
        "SparkParquetSink",
        "HdfsSinkConnector",
        "Hdfs3SinkConnector",
        "io.confluent.connect.hdfs3.Hdfs3SinkConnector",
        "io.confluent.connect.hdfs.HdfsSinkConnector",
    ],
)
def test_confluent_names_resolve_to_the_sink(name: str) -> None:
    assert Plugins().resolve_connector({"connector.class": name}) is SparkParquetSinkConnector


@pytest.mark.slow
def test_the_sink_config_runs_as_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    subprocess.run(
        [sys.executable, str(ROOT / "scripts/sqlite-demo-db"), "200"],
        check=True,
        capture_output=True,
    )
    config = load_worker_config(CONFIGS / "connect-standalone.json")
    log = FileLog(config["log.dir"])
    herder = StandaloneHerder(config, log=log, worker_id="127.0.0.1:8083")
    herder.start()
    try:
        for file in ("connect-jdbc-sqlite-source.json", "connect-spark-parquet-sink.json"):
            name, connector = load_connector_config(CONFIGS / file)
            herder.put_connector_config(name, connector, allow_replace=True)
        lake = tmp_path / "data/lake/topics/shop-orders"

        def rows() -> int:
            return sum(pq.read_metadata(f).num_rows for f in lake.rglob("*.parquet"))

        # 200 orders, committed by the 5 s scheduled rotation.
        try:
            wait_until(lambda: lake.is_dir() and rows() >= 200, 60, "the orders in the lake")
        except AssertionError:
            raise AssertionError(
                [herder.connector_status(n).to_json() for n in herder.connectors()]
            ) from None
    finally:
        herder.stop()
        log.close()
    table = pq.read_table(next(lake.rglob("*.parquet")))
    assert {"id", "customer", "amount", "updated_at"} <= set(table.column_names)
    assert rows() == 200
