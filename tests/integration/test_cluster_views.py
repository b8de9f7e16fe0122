"""What every worker of a cluster shows, as real `connect distributed` processes: the
records in and out of tasks that run on other workers (`connect ps`, the console), a
connector created through one worker readable through every other as soon as the
create call returns, and the cluster id in `GET /` (the embedded log's stable one,
and Kafka's own on the librdkafka mock cluster)."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connect.herder.base import CLUSTER_ID_FILE
from connect.rest.peers import PEER_TIMEOUT_S
from tests.conftest import ROOT
from tests.integration.conftest import WorkerProcess
from tests.integration.test_distributed import (  # noqa: F401 (the cluster fixture)
    Cluster,
    cluster,
    source,
)
from tests.kafka import MockKafkaCluster
from tests.waiting import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SLOW_START = "tests.integration.slow_plugins.SlowStartSource"


def _ps(worker: WorkerProcess, **env: str) -> list[dict[str, Any]]:
    """`connect ps --json` against `worker`, as a user runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "connect.cli.main", "ps", "--url", worker.url, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


def _answers(worker: WorkerProcess, headers: dict[str, str]) -> bool:
    if worker.proc.poll() is not None:
        raise AssertionError(f"worker exited:\n{worker.stderr}")
    try:
        return worker.request("GET", "/", headers=headers)[0] == 200
    except OSError:
        return False


def _counted(worker: WorkerProcess, tasks: int, **env: str) -> list[dict[str, Any]] | None:
    """`connect ps` once every task has records in and out, from every worker."""
    found = _ps(worker, **env)
    workers = {t["worker_id"] for t in found}
    done = all(t["records_in"] > 0 and t["records_out"] > 0 for t in found)
    return found if len(found) == tasks and len(workers) == tasks and done else None


def test_every_worker_shows_the_records_of_tasks_on_other_workers(
    cluster: Callable[..., Cluster],  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster()
    a, b = c.start(), c.start()
    c.create("src", source("numbers", tmp_path / "src.jsonl", tasks=2, throughput=100))
    status = wait_until(lambda: c.running("src", 2), 30, "src running")
    assert {t["worker_id"] for t in status["tasks"]} == {
        f"127.0.0.1:{a.port}",
        f"127.0.0.1:{b.port}",
    }, "one task on each worker"

    for worker in (a, b):
        tasks = wait_until(lambda w=worker: _counted(w, 2), 30, f"counts on {worker.url}")
        assert {t["worker_id"] for t in tasks} == {f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"}
        # The console reads the same counters.
        code, body = worker.request("GET", "/ops/connectors?connector=src")
        assert code == 200, body
        (view,) = body["connectors"]
        assert all(t["records_in"] > 0 for t in view["tasks"]), view["tasks"]


def test_peers_are_asked_with_the_callers_credentials(
    cluster: Callable[..., Cluster],  # noqa: F811
    tmp_path: Path,
) -> None:
    users = tmp_path / "users.properties"
    users.write_text("ops: s3cret\n")
    c = cluster(**{"rest.basic.auth.users.file": str(users)})
    a, b = c.start(ready=False), c.start(ready=False)
    auth = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}
    for worker in (a, b):
        wait_until(lambda w=worker: _answers(w, auth), 30, f"{worker.url} ready")
    config = source("numbers", tmp_path / "src.jsonl", tasks=2, throughput=100)
    assert a.request("PUT", "/connectors/src/config", config, headers=auth)[0] == 201
    credentials = {"CONNECT_REST_USER": "ops", "CONNECT_REST_PASSWORD": "s3cret"}
    wait_until(lambda: _counted(b, 2, **credentials), 30, "counts through basic auth")
    assert a.request("GET", "/ops/tasks?local=true")[0] == 401


def test_a_peer_that_does_not_answer_costs_a_bounded_wait_not_the_view(
    cluster: Callable[..., Cluster],  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster()
    a, b = c.start(), c.start()
    c.create("src", source("numbers", tmp_path / "src.jsonl", tasks=2, throughput=100))
    wait_until(lambda: _counted(a, 2), 30, "counts from both workers")
    os.kill(b.proc.pid, signal.SIGSTOP)  # alive to the kernel, silent to its peers
    try:
        started = time.monotonic()
        code, body = a.request("GET", "/ops/tasks")
        took = time.monotonic() - started
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    assert code == 200, body
    assert took < PEER_TIMEOUT_S + 2, f"/ops/tasks took {took:.1f} s"
    here = f"127.0.0.1:{a.port}"
    mine = [t for t in body["tasks"] if t["worker_id"] == here]
    assert mine and all(t["records_in"] > 0 for t in mine), body
    assert all(t["records_in"] == 0 for t in body["tasks"] if t["worker_id"] != here), body


def test_a_connector_created_on_one_worker_is_readable_on_every_other_at_once(
    cluster: Callable[..., Cluster],  # noqa: F811
    tmp_path: Path,
) -> None:
    """The owner writes the first status only once the connector's start() returned
    (2 s here): until then the status is UNASSIGNED, never 404."""
    c = cluster()
    a, b = c.start(), c.start()
    for i in range(3):
        name = f"slow{i}"
        config = {"connector.class": SLOW_START, "tasks.max": "1", "start.delay.ms": "2000"}
        code, body = b.request("POST", "/connectors", {"name": name, "config": config})
        assert code == 201, body
        for worker in (a, b):
            code, info = worker.request("GET", f"/connectors/{name}")
            assert code == 200 and info["name"] == name, info
            code, status = worker.request("GET", f"/connectors/{name}/status")
            assert code == 200, status
            assert status["connector"]["state"] in ("UNASSIGNED", "RUNNING"), status
        a.wait_state(name, "RUNNING")


def test_the_embedded_log_reports_one_stable_cluster_id(
    cluster: Callable[..., Cluster],  # noqa: F811
    tmp_path: Path,
) -> None:
    c = cluster()
    ports = c.start_many(2)
    ids = {w.request("GET", "/")[1]["kafka_cluster_id"] for w in c.live()}
    assert len(ids) == 1 and "embedded" not in ids
    (cluster_id,) = ids
    assert (tmp_path / "log" / CLUSTER_ID_FILE).read_text() == cluster_id
    c.stop_all()
    c.start(ports[0])
    assert c.any().request("GET", "/")[1]["kafka_cluster_id"] == cluster_id


def test_on_kafka_get_root_reports_the_clusters_own_id(
    cluster: Callable[..., Cluster],  # noqa: F811
) -> None:
    kafka = MockKafkaCluster()
    try:
        # The mock auto-creates topics with 4 partitions: the internal topics ask for fewer.
        c = cluster(
            **{
                "bootstrap.servers": kafka.bootstrap,
                "offset.storage.partitions": "1",
                "status.storage.partitions": "1",
            }
        )
        info = c.start().request("GET", "/")[1]
        assert info["kafka_cluster_id"].startswith("mockCluster"), info
        c.stop_all()
    finally:
        kafka.stop()
