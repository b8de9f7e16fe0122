"""A paused task commits what it did before the pause, as a stopped one does: its
offsets are visible (REST, `connect offsets get`) for as long as the pause lasts, not
only after a resume or a stop. The offset flush interval here is an hour, so only
the pause can commit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from connect.herder.standalone import StandaloneHerder
from tests.connect.worker.retry_plugins import Trace
from tests.connect.worker.test_sink_batches import envelopes
from tests.waiting import wait_until

HOUR_MS = "3600000"


def test_a_paused_source_commits_its_offsets(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    src = tmp_path / "in.txt"
    src.write_text("".join(f"line {i}\n" for i in range(20)))
    herder = start_herder({"offset.flush.interval.ms": HOUR_MS})
    config = {"connector.class": "FileStreamSource", "file": str(src), "topic": "lines"}
    herder.put_connector_config("src", config, allow_replace=False)
    wait_until(
        lambda: "lines" in herder.log.list_topics() and herder.log.latest_offset("lines", 0) == 20,
        60,
        "the lines in the log",
    )
    assert herder.connector_offsets("src") == []  # the hour has not passed
    herder.pause_connector("src")
    expected = [{"partition": {"filename": str(src)}, "offset": {"position": src.stat().st_size}}]
    # Was: nothing, for as long as the connector stayed paused.
    wait_until(lambda: herder.connector_offsets("src") == expected, 30, "offsets on pause")
    assert [t.state for t in herder.connector_status("src").tasks] == ["PAUSED"]
    with src.open("a") as f:  # a resumed task goes on from there
        f.write("line 20\n")
    herder.resume_connector("src")
    wait_until(lambda: herder.log.latest_offset("lines", 0) == 21, 60, "the new line")
    assert b"line 20" in (herder.log.read("lines", 0, 20)[0].value or b"")


def test_a_paused_sink_commits_what_it_delivered(
    start_herder: Callable[..., StandaloneHerder], tmp_path: Path
) -> None:
    trace = Trace(tmp_path / "trace")
    herder = start_herder({"offset.flush.interval.ms": HOUR_MS})
    herder.log.create_topic("orders", 1)
    herder.log.append("orders", 0, envelopes(range(4)))
    config = {
        "connector.class": "tests.connect.worker.retry_plugins.RetryingSink",
        "topics": "orders",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "trace.file": str(trace.path),
    }
    herder.put_connector_config("sink", config, allow_replace=False)
    wait_until(lambda: len(trace.delivered()) == 4, 60, "the records delivered")
    assert herder.connector_offsets("sink") == []
    herder.pause_connector("sink")
    expected = [
        {
            "partition": {"kafka_topic": "orders", "kafka_partition": 0},
            "offset": {"kafka_offset": 4},
        }
    ]
    wait_until(lambda: herder.connector_offsets("sink") == expected, 30, "offsets on pause")
