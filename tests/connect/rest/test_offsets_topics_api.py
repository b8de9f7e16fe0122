"""`/connectors/{name}/offsets` and `/topics`: KIP-875 and KIP-558 over real HTTP, with
data really flowing from a file through the log into a file."""

from __future__ import annotations

from pathlib import Path

import httpx

from connect.rest import TopicTracking
from tests.connect.rest.live import (
    LiveServers,
    assert_error,
    sink_config,
    source_config,
)
from tests.waiting import wait_until

STOPPED_MESSAGE = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can "
    "be done for the specified connector by issuing a 'PUT' request to the "
    "'/connectors/src/stop' endpoint"
)


def _pipeline(client: httpx.Client, tmp_path: Path, lines: int = 20) -> tuple[Path, Path]:
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("".join(f"line {i}\n" for i in range(lines)))
    assert client.post("/connectors", json={"name": "src", "config": source_config(src)}).is_success
    assert client.post("/connectors", json={"name": "sink", "config": sink_config(dst)}).is_success
    wait_until(lambda: dst.exists() and dst.read_text().count("\n") == lines)
    return src, dst


def _stop(client: httpx.Client, name: str) -> None:
    assert client.put(f"/connectors/{name}/stop").status_code == 204
    wait_until(
        lambda: client.get(f"/connectors/{name}/status").json()["connector"]["state"] == "STOPPED"
    )


def test_source_offsets_read_alter_and_reset(client: httpx.Client, tmp_path: Path):
    src, _ = _pipeline(client, tmp_path)
    partition = {"filename": str(src)}
    expected = {"offsets": [{"partition": partition, "offset": {"position": src.stat().st_size}}]}
    wait_until(lambda: client.get("/connectors/src/offsets").json() == expected)

    change = {"offsets": [{"partition": partition, "offset": {"position": 7}}]}
    assert_error(client.patch("/connectors/src/offsets", json=change), 400, STOPPED_MESSAGE)
    assert_error(client.delete("/connectors/src/offsets"), 400, "STOPPED state")

    _stop(client, "src")
    response = client.patch("/connectors/src/offsets", json=change)
    assert response.status_code == 200
    assert (
        set(response.json()) == {"message"} and "altered successfully" in response.json()["message"]
    )
    assert client.get("/connectors/src/offsets").json() == change

    response = client.delete("/connectors/src/offsets")
    assert response.status_code == 200
    assert response.json() == {
        "message": "The offsets for this connector have been reset successfully"
    }
    assert client.get("/connectors/src/offsets").json() == {"offsets": []}


def test_sink_offsets_are_its_consumer_group(client: httpx.Client, tmp_path: Path):
    _pipeline(client, tmp_path, lines=20)
    expected = {
        "offsets": [
            {
                "partition": {"kafka_topic": "lines", "kafka_partition": 0},
                "offset": {"kafka_offset": 20},
            }
        ]
    }
    wait_until(lambda: client.get("/connectors/sink/offsets").json() == expected)
    _stop(client, "sink")
    change = {
        "offsets": [
            {
                "partition": {"kafka_topic": "lines", "kafka_partition": 0},
                "offset": {"kafka_offset": 5},
            }
        ]
    }
    assert client.patch("/connectors/sink/offsets", json=change).status_code == 200
    assert client.get("/connectors/sink/offsets").json() == change
    bad = {"offsets": [{"partition": {"kafka_topic": "lines"}, "offset": {"kafka_offset": 1}}]}
    assert_error(client.patch("/connectors/sink/offsets", json=bad), 400, "kafka_partition")
    assert client.delete("/connectors/sink/offsets").status_code == 200
    assert client.get("/connectors/sink/offsets").json() == {"offsets": []}


def test_alter_offsets_needs_a_non_empty_list(client: httpx.Client, tmp_path: Path):
    client.post("/connectors", json={"name": "src", "config": source_config(tmp_path / "i")})
    _stop(client, "src")
    message = "Partitions / offsets need to be provided for an alter offsets request"
    assert_error(client.patch("/connectors/src/offsets", json={"offsets": []}), 400, message)
    assert_error(client.patch("/connectors/src/offsets", json={}), 400, message)
    assert_error(client.patch("/connectors/src/offsets", json={"offsets": {}}), 400, "array")
    assert_error(client.patch("/connectors/src/offsets", json={"offsets": [1]}), 400, "object")
    assert_error(client.patch("/connectors/src/offsets", content=b"offsets"), 400, "JSON")
    bad_partition = {"offsets": [{"partition": {}, "offset": None}]}
    assert_error(client.patch("/connectors/src/offsets", json=bad_partition), 400, "partition")


def test_offsets_of_an_unknown_connector_are_404(client: httpx.Client):
    change = {"offsets": [{"partition": {"a": 1}, "offset": None}]}
    assert_error(client.patch("/connectors/nope/offsets", json=change), 404, "nope")
    assert_error(client.get("/connectors/nope/offsets"), 404, "nope")


def test_active_topics_and_reset(client: httpx.Client, tmp_path: Path):
    _pipeline(client, tmp_path)
    wait_until(
        lambda: client.get("/connectors/src/topics").json() == {"src": {"topics": ["lines"]}}
    )
    wait_until(
        lambda: client.get("/connectors/sink/topics").json() == {"sink": {"topics": ["lines"]}}
    )
    response = client.put("/connectors/src/topics/reset")
    assert response.status_code == 202 and response.content == b""
    assert client.get("/connectors/src/topics").json() == {"src": {"topics": []}}


def test_topic_tracking_can_be_disabled(start_rest: LiveServers, tmp_path: Path):
    client = start_rest(topic_tracking=TopicTracking(enabled=False)).client
    client.post("/connectors", json={"name": "src", "config": source_config(tmp_path / "i")})
    assert_error(client.get("/connectors/src/topics"), 403, "Topic tracking is disabled.")
    assert_error(client.put("/connectors/src/topics/reset"), 403, "Topic tracking is disabled.")


def test_topic_tracking_reset_can_be_disabled(start_rest: LiveServers, tmp_path: Path):
    client = start_rest(topic_tracking=TopicTracking(allow_reset=False)).client
    client.post("/connectors", json={"name": "src", "config": source_config(tmp_path / "i")})
    assert client.get("/connectors/src/topics").status_code == 200
    assert_error(client.put("/connectors/src/topics/reset"), 403, "reset is disabled")
