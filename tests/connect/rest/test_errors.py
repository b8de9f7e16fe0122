"""The REST layer's error contract: a client's mistake is a 4xx with Kafka's error body
and one line that names what is wrong; nothing answers with a traceback, a Python
frame or a server path, and an error of ours is a 500 that names only its type (the
worker log keeps the traceback)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.connect.rest.live import Live, assert_error, sink_config

_LEAKS = ('File "', "Traceback", ".py", "/work", "/tmp")


def _clean(message: str) -> str:
    assert "\n" not in message, message
    for leak in _LEAKS:
        assert leak not in message, message
    return message


def _stopped_sink(rest: Live, tmp_path: Path) -> None:
    client = rest.client
    created = client.post("/connectors", json={"name": "snk", "config": sink_config(tmp_path)})
    assert created.status_code == 201, created.text
    assert client.put("/connectors/snk/stop").status_code == 204


def test_query_parameters_that_are_missing_or_malformed_are_400_naming_them(
    rest: Live, tmp_path: Path
) -> None:
    _stopped_sink(rest, tmp_path / "out.txt")
    path = "/ops/connectors/snk/offsets-for-time"
    missing = assert_error(rest.client.get(path), 400, "'timestamp_ms'", "required")
    assert _clean(missing) == "Query parameter 'timestamp_ms' is required"
    _clean(assert_error(rest.client.get(f"{path}?timestamp_ms=soon"), 400, "'timestamp_ms'"))
    assert rest.client.get(f"{path}?timestamp_ms=0").status_code == 200


def test_empty_malformed_and_array_bodies_are_400(rest: Live) -> None:
    client = rest.client
    for response in (
        client.post("/connectors", content=b""),
        client.post("/connectors", content=b"{"),
        client.post("/connectors", json=[{"name": "x"}]),
        client.put("/connectors/x/config", json=["a"]),
        client.put("/connector-plugins/FileStreamSink/config/validate", content=b"\xff"),
    ):
        _clean(assert_error(response, 400))


def test_offsets_for_a_topic_that_does_not_exist_are_400_and_log_no_traceback(
    rest: Live, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _stopped_sink(rest, tmp_path / "out.txt")
    body = {
        "offsets": [
            {
                "partition": {"kafka_topic": "nowhere", "kafka_partition": 0},
                "offset": {"kafka_offset": 5},
            }
        ]
    }
    with caplog.at_level(logging.INFO):
        response = rest.client.patch("/connectors/snk/offsets", json=body)
    _clean(assert_error(response, 400, "nowhere", "does not exist"))
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    # The same keep-alive connection goes on serving.
    assert rest.client.get("/connectors").json() == ["snk"]


def test_an_error_of_ours_is_a_500_naming_its_type_only(
    rest: Live, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A fault no test can cause through the API (a bug), injected into the herder."""

    def broken() -> list[str]:
        raise FileNotFoundError(2, "No such file", "/srv/secret/connect.key")

    monkeypatch.setattr(rest.herder, "connectors", broken)
    with caplog.at_level(logging.INFO):
        response = rest.client.get("/connectors")
    message = assert_error(response, 500, "FileNotFoundError")
    assert "/srv/secret" not in _clean(message)
    # The worker log has the traceback, once, from the REST layer; uvicorn logged no
    # "Exception in ASGI application" and kept the connection.
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.exc_info is not None) for r in errors] == [("connect.rest", True)]
    monkeypatch.undo()
    assert rest.client.get("/connectors").json() == []
