"""FileStreamSink after a crash that cut a write short: a SIGKILL can stop a write()
at a page boundary, leaving the file's last line partial; the records after the last
commit are delivered again, and must not be glued to that fragment (Kafka's sink
appends straight after it, turning two lines into one). The whole-worker version is
tests/integration/test_standalone_worker.py::test_sigkill_restart_loses_nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from connect.api import SinkRecord
from connectors.file.sink import FileStreamSinkTask


def _sink(path: Path) -> FileStreamSinkTask:
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "t"})
    return task


def _record(value: str, offset: int) -> SinkRecord:
    return SinkRecord(topic="t", kafka_partition=0, value=value, kafka_offset=offset)


def test_a_torn_last_line_is_ended_before_the_redelivered_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "out.txt"
    out.write_bytes(b"line 1\nline 2\nline 3 is cut sh")
    with caplog.at_level(logging.WARNING):
        task = _sink(out)
    task.put([_record("line 3 is cut short", 2), _record("line 4", 3)])
    task.stop()
    assert out.read_bytes().splitlines() == [
        b"line 1", b"line 2", b"line 3 is cut sh", b"line 3 is cut short", b"line 4",
    ]
    assert "ended in a partial line" in caplog.text


@pytest.mark.parametrize("before", [b"", b"line 1\n"])
def test_a_whole_file_is_appended_to_as_it_is(tmp_path: Path, before: bytes) -> None:
    out = tmp_path / "out.txt"
    out.write_bytes(before)
    task = _sink(out)
    task.put([_record("next", 0)])
    task.stop()
    assert out.read_bytes() == before + b"next\n"
