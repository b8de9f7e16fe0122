"""`/metrics` and the `/ops` endpoints on a live REST server over a real herder and log
(tasks as threads: their counters are read directly). Worker processes with tasks in
child processes are covered by tests/integration/test_metrics_worker.py."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from connect.rest import BasicAuth
from tests.connect.rest.live import Live, LiveServers, assert_error, sink_config, source_config
from tests.waiting import wait_until


def samples(client: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(metrics: dict, name: str, **labels: str) -> float | None:
    return metrics.get((name, tuple(sorted(labels.items()))))


def _pipeline(rest: Live, tmp_path: Path, lines: int) -> None:
    (tmp_path / "in.txt").write_text("".join(f"line {i}\n" for i in range(lines)))
    client = rest.client
    client.post("/connectors", json={"name": "src", "config": source_config(tmp_path / "in.txt")})
    client.post("/connectors", json={"name": "snk", "config": sink_config(tmp_path / "out.txt")})


def test_counters_match_the_traffic(rest: Live, tmp_path: Path):
    _pipeline(rest, tmp_path, 500)
    task = {"connector": "src", "task": "0"}
    sink = {"connector": "snk", "task": "0"}

    def settled() -> dict | None:
        m = samples(rest.client)
        done = value(m, "tributary_sink_task_sink_record_send_total", **sink) == 500
        committed = (
            value(
                m,
                "tributary_sink_partition_lag_records",
                connector="snk",
                topic="lines",
                partition="0",
            )
            == 0
        )
        source_committed = value(m, "tributary_log_fsync_seconds_count", **task)
        return m if done and committed and source_committed else None

    m = wait_until(settled, 30, "the sink put every line and committed")
    assert value(m, "tributary_source_task_source_record_poll_total", **task) == 500
    assert value(m, "tributary_source_task_source_record_write_total", **task) == 500
    assert value(m, "tributary_sink_task_sink_record_read_total", **sink) == 500
    assert value(m, "tributary_task_batch_size_records_sum", **task) == 500
    assert value(m, "tributary_task_batch_size_records_count", **task) >= 1
    assert value(m, "tributary_task_offset_commit_completion_total", **sink) >= 1
    assert value(m, "tributary_task_offset_commit_failure_total", **sink) == 0
    assert value(m, "tributary_task_offset_commit_seconds_count", **sink) >= 1
    assert value(m, "tributary_sink_task_partition_count", **sink) == 1
    assert (
        value(
            m,
            "tributary_sink_partition_log_end_offset",
            connector="snk",
            topic="lines",
            partition="0",
        )
        == 500
    )
    assert value(m, "tributary_task_status", **task, state="RUNNING") == 1
    assert value(m, "tributary_connector_status", connector="src", state="RUNNING") == 1
    assert (
        value(
            m,
            "tributary_connector_info",
            connector="snk",
            type="sink",
            connector_class="FileStreamSink",
        )
        == 1
    )
    assert value(m, "tributary_worker_connector_count", state="RUNNING") == 2
    assert value(m, "tributary_worker_task_count", state="RUNNING") == 2
    assert value(m, "tributary_worker_connector_task_count", connector="src", state="RUNNING") == 1
    assert value(m, "tributary_log_appends_total", **task) >= 1
    assert value(m, "tributary_log_fsync_seconds_count", **task) >= 1
    assert value(m, "tributary_log_topic_partitions", topic="lines") == 1
    assert value(m, "tributary_log_topic_segments", topic="lines") >= 1
    assert value(m, "tributary_log_topic_size_bytes", topic="lines") > 500 * len("line 0")
    assert value(m, "tributary_task_error_record_failures_total", **sink) == 0

    tasks = rest.client.get("/ops/tasks").json()["tasks"]
    by_name = {(t["connector"], t["task"]): t for t in tasks}
    assert by_name[("src", 0)]["records_in"] == 500 and by_name[("src", 0)]["type"] == "source"
    assert by_name[("snk", 0)]["records_out"] == 500 and by_name[("snk", 0)]["state"] == "RUNNING"


def test_lag_of_a_paused_sink(rest: Live, tmp_path: Path):
    _pipeline(rest, tmp_path, 100)
    client = rest.client

    def lag() -> list:
        return client.get("/ops/lag", params={"connector": "snk"}).json()["lag"]

    wait_until(lambda: lag() and lag()[0]["committed_offset"] == 100, 30, "sink caught up")
    assert client.put("/connectors/snk/pause").status_code == 202
    wait_until(
        lambda: client.get("/connectors/snk/status").json()["tasks"][0]["state"] == "PAUSED",
        30,
        "sink paused",
    )
    with open(tmp_path / "in.txt", "a") as f:
        f.write("".join(f"more {i}\n" for i in range(40)))
    entry = wait_until(lambda: [e for e in lag() if e["log_end_offset"] == 140], 30, "more")[0]
    assert entry == {
        "connector": "snk",
        "topic": "lines",
        "partition": 0,
        "log_end_offset": 140,
        "committed_offset": 100,
        "lag": 40,
    }
    m = samples(client)
    assert (
        value(
            m, "tributary_sink_partition_lag_records", connector="snk", topic="lines", partition="0"
        )
        == 40
    )
    assert value(m, "tributary_task_status", connector="snk", task="0", state="PAUSED") == 1
    # a source connector has no lag; an unknown one is a 404
    assert_error(client.get("/ops/lag", params={"connector": "src"}), 400, "not a sink")
    assert_error(client.get("/ops/lag", params={"connector": "nope"}), 404, "nope")


def test_offsets_for_time_use_the_time_index(rest: Live, tmp_path: Path):
    _pipeline(rest, tmp_path, 10)
    client = rest.client
    wait_until(lambda: client.get("/ops/lag").json()["lag"], 30, "lag of the sink")
    wait_until(lambda: rest.herder.log.latest_offset("lines", 0) == 10, 30, "first lines")
    time.sleep(0.01)  # the next records' timestamps must be later than the first ten's
    cut = int(time.time() * 1000)
    with open(tmp_path / "in.txt", "a") as f:
        f.write("".join(f"late {i}\n" for i in range(5)))
    wait_until(lambda: rest.herder.log.latest_offset("lines", 0) == 15, 30, "late lines")
    body = client.get("/ops/connectors/snk/offsets-for-time", params={"timestamp_ms": cut}).json()
    assert body == {
        "offsets": [
            {
                "partition": {"kafka_topic": "lines", "kafka_partition": 0},
                "offset": {"kafka_offset": 10},
            }
        ]
    }
    future = client.get(
        "/ops/connectors/snk/offsets-for-time", params={"timestamp_ms": cut + 3_600_000}
    ).json()
    assert future["offsets"][0]["offset"] == {"kafka_offset": 15}  # the end: nothing to replay
    assert_error(
        client.get("/ops/connectors/src/offsets-for-time", params={"timestamp_ms": cut}),
        400,
        "source",
    )


def test_metrics_need_credentials_like_every_endpoint(start_rest: LiveServers, tmp_path: Path):
    users = tmp_path / "users"
    users.write_text("ops: s3cret\n")
    live = start_rest(auth=BasicAuth.from_file(users))
    refused = httpx.get(live.url + "/metrics")
    assert refused.status_code == 401 and "WWW-Authenticate" in refused.headers
    assert httpx.get(live.url + "/ops/tasks").status_code == 401
    ok = httpx.get(live.url + "/metrics", auth=("ops", "s3cret"))
    assert ok.status_code == 200 and "tributary_worker_task_count" in ok.text


def test_collector_in_a_registry_gives_what_the_endpoint_serves(rest: Live, tmp_path: Path):
    """`ConnectCollector` (for any prometheus-client registry) and the endpoint's own
    writer produce the same samples; prometheus-client's parser reads both."""
    from prometheus_client import CollectorRegistry, generate_latest

    from connect.metrics import ConnectCollector

    _pipeline(rest, tmp_path, 50)
    wait_until(
        lambda: (
            value(
                samples(rest.client),
                "tributary_sink_task_sink_record_send_total",
                connector="snk",
                task="0",
            )
            == 50
        ),
        30,
        "50 records put",
    )
    rest.client.put("/connectors/src/pause")
    rest.client.put("/connectors/snk/pause")
    wait_until(
        lambda: value(samples(rest.client), "tributary_worker_task_count", state="PAUSED") == 2,
        30,
        "both paused",
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConnectCollector(rest.herder))
    theirs = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for s in family.samples
    }
    ours = samples(rest.client)
    varying = ("seconds", "_created")  # times taken differ run to run; nothing else may
    assert {k for k in ours if not any(v in k[0] for v in varying)} == {
        k for k in theirs if not any(v in k[0] for v in varying)
    }
    for key, number in ours.items():
        if not any(v in key[0] for v in varying):
            assert theirs[key] == number, key
