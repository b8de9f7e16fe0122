"""`/metrics` of a real `connect standalone` process whose tasks run in child processes
(the default): the counters the children ship reach the scrape and match the traffic,
a paused sink shows its lag, and the endpoint wants the REST API's credentials."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import connector_file, wait_until

pytestmark = pytest.mark.integration

AUTH = ("ops", "s3cret")


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(url + "/metrics", auth=AUTH, timeout=30)
    assert response.status_code == 200, response.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(metrics: dict, name: str, **labels: str) -> float | None:
    return metrics.get((name, tuple(sorted(labels.items()))))


def test_task_process_counters_reach_the_scrape(tmp_path: Path, start_worker) -> None:
    users = tmp_path / "users"
    users.write_text("ops: s3cret\n")
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("".join(f"line {i}\n" for i in range(1000)))
    files = [
        connector_file(
            tmp_path,
            "source",
            {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"},
        ),
        connector_file(
            tmp_path,
            "sink",
            {"connector.class": "FileStreamSink", "file": str(out), "topics": "lines"},
        ),
    ]
    worker = start_worker(files, {"rest.basic.auth.users.file": str(users)}, ready=False)

    def ready() -> bool:
        assert worker.proc.poll() is None, worker.stderr
        try:
            return httpx.get(worker.url + "/", auth=AUTH).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(ready, 30, "the REST API (with credentials)")
    assert httpx.get(worker.url + "/metrics").status_code == 401
    assert worker.task_pids(), "tasks run in child processes"
    source = {"connector": "source", "task": "0"}
    sink = {"connector": "sink", "task": "0"}

    def sent(n: int) -> dict | None:
        m = scrape(worker.url)
        if value(m, "tributary_sink_task_sink_record_send_total", **sink) != n:
            return None
        # each child ships its counters within a second of changing them
        if value(m, "tributary_source_task_source_record_poll_total", **source) != n:
            return None
        # polled and written are counted a step apart: a shipment may fall between them
        if value(m, "tributary_source_task_source_record_write_total", **source) != n:
            return None
        if (
            value(
                m,
                "tributary_sink_partition_lag_records",
                connector="sink",
                topic="lines",
                partition="0",
            )
            != 0
        ):
            return None
        return m

    m = wait_until(lambda: sent(1000), 45, "1000 records put and committed")
    assert value(m, "tributary_source_task_source_record_poll_total", **source) == 1000
    assert value(m, "tributary_source_task_source_record_write_total", **source) == 1000
    assert value(m, "tributary_sink_task_sink_record_read_total", **sink) == 1000
    assert value(m, "tributary_task_batch_size_records_sum", **sink) == 1000
    assert value(m, "tributary_task_offset_commit_completion_total", **sink) >= 1
    assert value(m, "tributary_task_status", **sink, state="RUNNING") == 1
    assert value(m, "tributary_worker_task_count", state="RUNNING") == 2
    assert value(m, "tributary_log_topic_partitions", topic="lines") == 1

    code, _ = worker.request(
        "PUT", "/connectors/sink/pause", headers={"Authorization": "Basic b3BzOnMzY3JldA=="}
    )
    assert code == 202
    wait_until(
        lambda: value(scrape(worker.url), "tributary_task_status", **sink, state="PAUSED") == 1,
        30,
        "sink paused",
    )
    with open(src, "a") as f:
        f.write("".join(f"more {i}\n" for i in range(50)))

    def lagging() -> dict | None:
        m = scrape(worker.url)
        lag = value(
            m,
            "tributary_sink_partition_lag_records",
            connector="sink",
            topic="lines",
            partition="0",
        )
        # the log shows the lag at once; the source's counters within a second
        written = value(m, "tributary_source_task_source_record_write_total", **source)
        return m if lag == 50 and written == 1050 else None

    m = wait_until(lagging, 30, "a lag of 50 on the paused sink")
    assert value(m, "tributary_sink_task_sink_record_send_total", **sink) == 1000
    assert (
        value(
            m,
            "tributary_sink_partition_log_end_offset",
            connector="sink",
            topic="lines",
            partition="0",
        )
        == 1050
    )
