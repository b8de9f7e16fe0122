"""Source offsets written in transactions, read by a worker that does not run sources
exactly once (a cluster being upgraded, or a worker restarted with the feature off):
`GET /connectors/{name}/offsets`, `connect offsets get` and a restarted task read
the offsets topic read_committed, so an aborted offset write (a fenced or killed
exactly-once task's) never shows and never moves a task, on a real `connect
standalone` worker over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from connect.storage.offsets import encode_offsets, partition_key
from log import FileLog, partition_for_key
from tests.integration.conftest import connector_file
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

_SCRIPT = Path(sys.executable).with_name("connect")
CONNECT = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "connect.cli.main"]


def _aborted_offset(log_dir: Path, src: Path, position: int) -> None:
    """An exactly-once task's offset write whose transaction aborted."""
    with FileLog(log_dir, background=False) as log:
        producer = log.transactional_producer("elsewhere-src-0")
        producer.init_transactions()
        producer.begin_transaction()
        partition = {"filename": str(src)}
        items, _ = encode_offsets(
            {partition_key("src", partition): (partition, {"position": position})}, 0
        )
        ((key, value),) = items
        topic = "connect-offsets"
        producer.append(topic, partition_for_key(key, 25), [value], keys=[key])
        producer.abort_transaction()
        producer.close()


def test_an_aborted_offset_write_never_shows_nor_moves_a_task(
    tmp_path: Path, start_worker: Any
) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"".join(b"line %d\n" % i for i in range(5)))
    config = {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"}
    worker = start_worker([connector_file(tmp_path, "src", config)])

    def position() -> int | None:
        offsets = httpx.get(f"{worker.url}/connectors/src/offsets", timeout=10).json()["offsets"]
        return offsets[0]["offset"]["position"] if offsets else None

    size = src.stat().st_size
    wait_until(lambda: position() == size, 30, "the source's offset committed")
    _aborted_offset(tmp_path / "log", src, 10**6)
    assert position() == size
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    got = subprocess.run(
        [*CONNECT, "offsets", "get", "src", "--json", "--url", worker.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    assert [o["offset"] for o in json.loads(got.stdout)["offsets"]] == [{"position": size}]
    with src.open("ab") as f:
        f.write(b"line 5\nline 6\n")
    restarted = httpx.post(f"{worker.url}/connectors/src/tasks/0/restart", timeout=30)
    assert restarted.status_code in (200, 202, 204), restarted.text
    wait_until(lambda: position() == src.stat().st_size, 30, "the new lines read after a restart")
    with FileLog(tmp_path / "log", background=False) as log:
        values = [r.value for r in log.read("lines", 0, 0, max_bytes=1 << 20)]
    assert values == [b"line %d" % i for i in range(7)], "resumed where it was, none skipped"
