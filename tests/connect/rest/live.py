"""Live REST servers over real StandaloneHerders on real FileLogs, and HTTP clients for
them. Nothing is mocked: every test talks HTTP to a port a server really listens on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from connect.herder.standalone import StandaloneHerder
from connect.rest import BasicAuth, RestServer, TopicTracking
from connect.worker.config import WORKER_CONFIG
from log import FileLog

CONV = "tests.connect.plugins_for_tests.Utf8Converter"
FAILING = "tests.connect.plugins_for_tests.FailingSource"


def worker_config(log_dir: Path, **extra: str) -> dict[str, Any]:
    raw = {
        "log.dir": str(log_dir),
        "key.converter": CONV,
        "value.converter": CONV,
        "header.converter": CONV,
        "offset.flush.interval.ms": "100",
        "task.isolation": "thread",
        **extra,
    }
    return {**raw, **WORKER_CONFIG.parse(raw)}


@dataclass
class Live:
    herder: StandaloneHerder
    server: RestServer
    client: httpx.Client

    @property
    def url(self) -> str:
        return self.server.url


class LiveServers:
    """Factory of started herder + REST server pairs (port 0), all stopped by close()."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[tuple[Live, FileLog]] = []

    def __call__(
        self,
        *,
        auth: BasicAuth | None = None,
        topic_tracking: TopicTracking | None = None,
        start_herder: bool = True,
        **extra: str,
    ) -> Live:
        log = FileLog(self.tmp_path / "log")
        config = worker_config(self.tmp_path / "log", **extra)
        herder = StandaloneHerder(config, log=log, worker_id="w1")
        if start_herder:
            herder.start()
        server = RestServer(
            herder, host="127.0.0.1", port=0, auth=auth, topic_tracking=topic_tracking
        )
        server.start()
        live = Live(herder, server, httpx.Client(base_url=server.url, timeout=30))
        self.started.append((live, log))
        return live

    def close(self) -> None:
        for live, log in reversed(self.started):
            live.client.close()
            live.server.stop()
            live.herder.stop()
            log.close()
        self.started.clear()


def source_config(path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSource", "file": str(path), "topic": "lines", **extra}


def sink_config(path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "file": str(path), "topics": "lines", **extra}


def assert_error(response: httpx.Response, status: int, *fragments: str) -> str:
    """The response is Kafka's error body with `status`, mentioning every fragment."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"} and body["error_code"] == status, body
    for fragment in fragments:
        assert fragment in body["message"], body["message"]
    return body["message"]
