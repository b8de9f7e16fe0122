"""Shared fixtures: factories with defaults, a manual clock, real directories."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from log import FileLog

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


class ManualClock:
    """A clock tests move by hand (milliseconds), for retention, roll and flush."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_log(tmp_path: Path) -> Iterator[Callable[..., FileLog]]:
    """Open FileLogs on `tmp_path/log` (or a given dir); all are closed at teardown."""
    opened: list[FileLog] = []

    def factory(directory: Path | None = None, **kwargs: object) -> FileLog:
        kwargs.setdefault("background", False)
        log = FileLog(directory or tmp_path / "log", **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield factory
    for log in opened:
        log.close()


@pytest.fixture
def file_log(make_log: Callable[..., FileLog]) -> FileLog:
    return make_log()


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child Python processes that import the project."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# A private PostgreSQL server (`postgres_server`) and a fresh database per test
# (`postgres_url`) for tests marked `postgres`; the same for MariaDB (`mysql_server`,
# `mysql_url`) for tests marked `mysql`; one SparkSession (`spark`) for tests marked
# `spark`; a Spark standalone master and worker (`spark_cluster`); a real Apache Kafka
# broker (`kafka_broker`, one per session, started by scripts/kafka) beside librdkafka's
# mock, and a real Kafka Connect worker on a broker of its own (`kafka_connect`) as the
# reference to compare with. Each server starts only if a selected test asks for it,
# on a thread when the session starts (`tests.prestart`), beside the tests before it.
pytest_plugins = [
    "tests.prestart",
    "tests.pg",
    "tests.mysql",
    "tests.spark",
    "tests.spark_cluster",
    "tests.s3",
    "tests.kafka",
    "tests.kafka_broker",
    "tests.kafka_connect",
]


@pytest.fixture
def start_herder(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Start StandaloneHerders on tmp_path/log. Worker config keys come as a dict
    (`config=`) or as keyword arguments for keys without dots; the defaults are offsets
    flushed every 100 ms and the worker's default converters. All are stopped, and
    their logs closed, at teardown."""
    from connect.herder.standalone import StandaloneHerder
    from connect.worker.config import WORKER_CONFIG

    started: list[tuple[StandaloneHerder, FileLog]] = []

    def factory(config: dict[str, str] | None = None, **extra: str) -> StandaloneHerder:
        raw = {
            "log.dir": str(tmp_path / "log"),
            "offset.flush.interval.ms": "100",
            **(config or {}),
            **extra,
        }
        log = FileLog(tmp_path / "log")
        herder = StandaloneHerder({**raw, **WORKER_CONFIG.parse(raw)}, log=log, worker_id="w1")
        herder.start()
        started.append((herder, log))
        return herder

    yield factory
    for herder, log in started:
        herder.stop()
        log.close()


@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set the local time zone of this process and of the processes it starts (`TZ`,
    as a JVM's default zone is set), for output that prints local time; restored at
    teardown."""

    def set_zone(tz: str) -> None:
        monkeypatch.setenv("TZ", tz)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def batch_fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the SourceBatches some stage took record by record in this test
    (`records()` calls for more than one row; tasks must run as threads to be seen).
    A commit_batch that reads a single record is not a fallback."""
    from connect.api.batches import SourceBatch

    calls: list[int] = []
    original = SourceBatch.records

    def counting(self: SourceBatch) -> list[Any]:
        if len(self) > 1:
            calls.append(len(self))
        return original(self)

    monkeypatch.setattr(SourceBatch, "records", counting)
    return calls
