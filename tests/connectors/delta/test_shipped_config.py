"""configs/connect-delta-sink.json runs as shipped beside the shipped SQLite source
(scripts/sqlite-demo-db's database): the shop's orders land in data/delta/shop-orders,
a Delta table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from connect.herder.standalone import StandaloneHerder
from connect.plugins import Plugins
from connect.standalone import load_connector_config, load_worker_config
from connectors.delta.sink import DeltaSinkConnector
from log import FileLog
from tests.conftest import ROOT
from tests.waiting import wait_until

CONFIGS = ROOT / "configs"


@pytest.mark.parametrize("name", ["DeltaSink", "DeltaSinkConnector"])
def test_the_names_resolve_to_the_sink(name: str) -> None:
    assert Plugins().resolve_connector({"connector.class": name}) is DeltaSinkConnector


def _rows(table: Path) -> int:
    try:
        return DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).num_rows
    except Exception:  # not created yet
        return 0


@pytest.mark.slow
def test_the_sink_config_runs_as_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable, str(ROOT / "scripts/sqlite-demo-db"), "200"],
                   check=True, capture_output=True)
    config = load_worker_config(CONFIGS / "connect-standalone.json")
    log = FileLog(config["log.dir"])
    herder = StandaloneHerder(config, log=log, worker_id="127.0.0.1:8083")
    herder.start()
    table = tmp_path / "data/delta/shop-orders"
    try:
        for file in ("connect-jdbc-sqlite-source.json", "connect-delta-sink.json"):
            name, connector = load_connector_config(CONFIGS / file)
            herder.put_connector_config(name, connector, allow_replace=True)
        try:  # 200 orders, committed by the 5 s commit interval
            wait_until(lambda: _rows(table) >= 200, 60, "the orders in the table")
        except AssertionError:
            raise AssertionError(
                [herder.connector_status(n).to_json() for n in herder.connectors()]
            ) from None
    finally:
        herder.stop()
        log.close()
    delta = DeltaTable(str(table))
    assert {"id", "customer", "amount", "updated_at"} <= set(delta.schema().to_arrow().names)
    assert _rows(table) == 200
    assert delta.transaction_version("delta-sink-shop-orders-0") == 200
