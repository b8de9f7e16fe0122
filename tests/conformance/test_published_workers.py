"""Published worker configs with the connector configs they were published beside, as
real processes: Confluent's quickstart pair `connect-standalone
connect-avro-standalone.properties source-quickstart-sqlite.properties`, its records in
Avro with their schemas in a schema registry (here `connect registry`, Confluent's REST
API).

(Apache Kafka's own connect-standalone/connect-distributed.properties are run by
tests/integration/test_published_properties.py.)

The worker file's only changes, whole lines through that module's `published()`:
`key.converter.schema.registry.url` / `value.converter.schema.registry.url`
(`http://localhost:8081`) → the test's registry; `offset.storage.file.filename`
(`/tmp/connect.offsets`) → a file in the test's directory; a `listeners=` line with a
free port (the file leaves the REST port at 8083). The connector file is copied
unchanged; its relative `jdbc:sqlite:test.db` is the worker's working directory's.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import httpx
import pytest

from connect.converters.avro.converter import AvroConverter
from log import FileLog
from tests.conformance.published import PUBLISHED
from tests.connect.registry.test_processes import Process
from tests.integration.conftest import WorkerProcess, free_port
from tests.integration.test_published_properties import published
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration]

WORKER = "confluent/connect-avro-standalone.properties"


def test_confluents_avro_standalone_worker_runs_the_jdbc_quickstart(tmp_path: Path) -> None:
    registry_port, rest_port = free_port(), free_port()
    registry_url = f"http://127.0.0.1:{registry_port}"
    (tmp_path / "registry.json").write_text(
        json.dumps(
            {"log.dir": str(tmp_path / "registry-log"), "schema.registry.listeners": registry_url}
        )
    )
    registry = Process(tmp_path, ["registry", str(tmp_path / "registry.json")], "registry")
    try:
        registry.wait_http(f"{registry_url}/subjects")
        (tmp_path / "confluent").mkdir()
        worker_file = published(
            WORKER,
            tmp_path,
            {
                "key.converter.schema.registry.url=http://localhost:8081": (
                    f"key.converter.schema.registry.url={registry_url}"
                ),
                "value.converter.schema.registry.url=http://localhost:8081": (
                    f"value.converter.schema.registry.url={registry_url}"
                ),
                "offset.storage.file.filename=/tmp/connect.offsets": (
                    f"offset.storage.file.filename={tmp_path / 'connect.offsets'}"
                ),
            },
            [f"listeners=http://127.0.0.1:{rest_port}"],
        )
        connector = tmp_path / "source-quickstart-sqlite.properties"
        shutil.copy(PUBLISHED / "jdbc" / "source-quickstart-sqlite.properties", connector)
        conn = sqlite3.connect(tmp_path / "test.db")  # the quickstart's sqlite3 session
        with conn:
            conn.execute(
                "CREATE TABLE accounts(id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, "
                "name VARCHAR(255))"
            )
            conn.execute("INSERT INTO accounts(name) VALUES('alice')")
            conn.execute("INSERT INTO accounts(name) VALUES('bob')")
        conn.close()

        worker = WorkerProcess(
            tmp_path,
            {"listeners": f"http://127.0.0.1:{rest_port}"},
            [connector],
            worker_file=worker_file,
        ).wait_ready()
        try:
            worker.wait_state("test-source-sqlite-jdbc-autoincrement", "RUNNING")
            log = FileLog(tmp_path / "connect.offsets.tributary")
            try:

                def values() -> list[bytes]:
                    topic = "test-sqlite-jdbc-accounts"
                    if topic not in log.list_topics():
                        return []
                    found = [r.value for r in log.read(topic, 0, 0)]
                    return found if len(found) >= 2 else []

                raw = wait_until(values, 60, "two accounts in Avro")
            finally:
                log.close()
        finally:
            assert worker.stop() == 0
        assert "Traceback" not in worker.stderr

        # Confluent's wire format: magic byte 0, the registry's schema id, Avro binary.
        assert all(v[0] == 0 for v in raw)
        subjects = httpx.get(f"{registry_url}/subjects", timeout=10).json()
        assert "test-sqlite-jdbc-accounts-value" in subjects
        reader = AvroConverter()
        reader.configure({"schema.registry.url": registry_url}, is_key=False)
        try:
            rows = [
                reader.to_connect_data("test-sqlite-jdbc-accounts", v).value.to_dict() for v in raw
            ]
        finally:
            reader.close()
        assert rows == [{"id": 1, "name": "alice"}, {"id": 2, "name": "bob"}]
    finally:
        assert registry.stop() == 0
