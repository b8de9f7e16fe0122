"""configs/iceberg-sink.json runs as shipped beside the shipped SQLite source
(scripts/sqlite-demo-db's database): the shop's orders become the Iceberg table
shop.orders in data/iceberg, one row per order (upsert mode by id), and Apache
Iceberg's and Tabular's class names resolve to the sink."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from connect.herder.standalone import StandaloneHerder
from connect.plugins import Plugins
from connect.standalone import load_connector_config, load_worker_config
from connectors.iceberg.sink import IcebergSinkConnector
from log import FileLog
from tests.conftest import ROOT
from tests.waiting import wait_until

CONFIGS = ROOT / "configs"


@pytest.mark.parametrize(
    "name",
    ["IcebergSink", "org.apache.iceberg.connect.IcebergSinkConnector",
     "io.tabular.iceberg.connect.IcebergSinkConnector"],
)
def test_iceberg_names_resolve_to_the_sink(name: str) -> None:
    assert Plugins().resolve_connector({"connector.class": name}) is IcebergSinkConnector


@pytest.mark.slow
def test_the_sink_config_runs_as_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable, str(ROOT / "scripts/sqlite-demo-db"), "200"],
                   check=True, capture_output=True)
    config = load_worker_config(CONFIGS / "connect-standalone.json")
    log = FileLog(config["log.dir"])
    herder = StandaloneHerder(config, log=log, worker_id="127.0.0.1:8083")
    herder.start()
    warehouse = tmp_path / "data/iceberg"

    def rows() -> int:
        if not (warehouse / "catalog.db").exists():
            return 0
        catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                             warehouse=warehouse.as_uri())
        if not catalog.table_exists("shop.orders"):
            return 0
        return catalog.load_table("shop.orders").scan().to_arrow().num_rows

    try:
        for file in ("connect-jdbc-sqlite-source.json", "iceberg-sink.json"):
            name, connector = load_connector_config(CONFIGS / file)
            herder.put_connector_config(name, connector, allow_replace=True)
        try:
            wait_until(lambda: rows() >= 200, 60, "the orders in the Iceberg table")
        except AssertionError:
            raise AssertionError(
                [herder.connector_status(n).to_json() for n in herder.connectors()]
            ) from None
    finally:
        herder.stop()
        log.close()
    catalog = SqlCatalog("iceberg", uri=f"sqlite:///{warehouse / 'catalog.db'}",
                         warehouse=warehouse.as_uri())
    table = catalog.load_table("shop.orders")
    data = table.scan().to_arrow()
    assert {"id", "customer", "amount", "updated_at"} <= set(data.column_names)
    assert sorted(data.column("id").to_pylist()) == list(range(1, 201))
    assert table.schema().identifier_field_names() == {"id"}
