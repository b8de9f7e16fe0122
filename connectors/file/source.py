"""FileStreamSource: each line of a file (or stdin) becomes a record with a string value.

Kafka's configs (`file`, `topic`, `batch.size`) and offsets (source partition
`{"filename": <path>}`, offset `{"position": <byte after the line>}`), with one fix:
positions count bytes, not characters, so a restart resumes at the right place in
multi-byte UTF-8 text. Lines end at `\\n`, `\\r\\n` or `\\r`; a last line without an
end (or ending in a `\\r` that may be half of `\\r\\n`) is held back until more data
comes. The task tails the file: at its end, `poll()` waits up to a second.

The file is read in 1 MiB chunks and split once per chunk (`bytes.splitlines`); polls
hand out up to `batch.size` of the lines split so far.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Mapping
from itertools import accumulate
from typing import Any, BinaryIO

from connect.api import (
    NO_DEFAULT,
    STRING_SCHEMA,
    ConfigDef,
    ConfigError,
    ConfigType,
    DataError,
    ExactlyOnceSupport,
    Importance,
    SourceConnector,
    SourceRecord,
    SourceTask,
    at_least,
)

__all__ = ["FileStreamSourceConnector", "FileStreamSourceTask"]

_log = logging.getLogger(__name__)
_CHUNK = 1 << 20


def _single_topic(name: str, value: Any) -> None:
    if not value or len(value) != 1:
        raise ConfigError(
            name,
            value,
            "'topic' in FileStreamSourceConnector configuration "
            "requires definition of a single topic",
        )


CONFIG = (
    ConfigDef()
    .define(
        "file",
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Source filename. If not specified, the standard input will be used",
    )
    .define(
        "topic",
        ConfigType.LIST,
        NO_DEFAULT,
        _single_topic,
        Importance.HIGH,
        "The topic to publish data to",
    )
    .define(
        "batch.size",
        ConfigType.INT,
        2000,
        at_least(1),
        Importance.LOW,
        "The maximum number of records the source task can read from the file each time "
        "it is polled",
    )
)


class FileStreamSourceConnector(SourceConnector):
    VERSION = "0.1.0"

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self._props = dict(props)

    def task_class(self) -> type:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]  # one file, one task

    def stop(self) -> None:
        return None

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """An append-only file read from a stored byte position replays the same lines;
        standard input (no `file`) cannot be read again."""
        if props.get("file"):
            return ExactlyOnceSupport.SUPPORTED
        return ExactlyOnceSupport.UNSUPPORTED

    def alter_offsets(
        self, props: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]
    ) -> bool:
        for offset in offsets.values():
            if offset is None:
                continue
            position = offset.get("position")
            if not isinstance(position, int) or isinstance(position, bool) or position < 0:
                raise DataError("FileStreamSource offsets need a non-negative integer 'position'")
        return True


class FileStreamSourceTask(SourceTask):
    VERSION = "0.1.0"

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.filename: str | None = parsed["file"] or None
        self.topic: str = parsed["topic"][0]
        self.batch_size: int = parsed["batch.size"]
        self.partition = {"filename": self.filename} if self.filename else None
        self._stream: BinaryIO | None = None
        self._tail = b""  # bytes after the last complete line
        self._tail_start = 0  # file position of _tail[0]
        self._lines: list[bytes] = []
        self._ends: list[int] = []
        self._next = 0  # index of the next line to hand out
        self._stopped = threading.Event()

    def _open(self) -> BinaryIO | None:
        if self.filename is None:
            return sys.stdin.buffer
        try:
            stream = open(self.filename, "rb")  # noqa: SIM115 - kept open across polls
        except FileNotFoundError:
            _log.warning(
                "Couldn't find file %s for FileStreamSourceTask, sleeping to wait "
                "for it to be created",
                self.filename,
            )
            self._stopped.wait(1.0)
            return None
        assert self.partition is not None
        offset = self.context.offset_storage_reader.offset(self.partition)
        position = (offset or {}).get("position")
        if isinstance(position, int) and position > 0:
            stream.seek(position)
            self._tail_start = position
        return stream

    def _read_more(self) -> bool:
        """Split the next chunk into lines; False when no complete line came."""
        assert self._stream is not None
        chunk = (
            self._stream.read1(_CHUNK)
            if hasattr(self._stream, "read1")
            else self._stream.read(_CHUNK)
        )
        if not chunk:
            return False
        data = self._tail + chunk
        pieces = data.splitlines(keepends=True)
        if pieces and (pieces[-1][-1:] not in (b"\n", b"\r") or pieces[-1][-1:] == b"\r"):
            self._tail = pieces.pop()
        else:
            self._tail = b""
        if not pieces:
            return False
        self._ends = list(accumulate(map(len, pieces), initial=self._tail_start))[1:]
        self._tail_start = self._ends[-1]
        self._lines = [p.rstrip(b"\r\n") for p in pieces]
        self._next = 0
        return True

    def poll(self) -> list[SourceRecord] | None:
        if self._stream is None:
            self._stream = self._open()
            if self._stream is None:
                return None
        if self._next >= len(self._lines) and not self._read_more():
            self._stopped.wait(1.0)
            return None
        start, stop = self._next, min(self._next + self.batch_size, len(self._lines))
        self._next = stop
        partition, topic = self.partition, self.topic
        values = [line.decode("utf-8", errors="replace") for line in self._lines[start:stop]]
        if partition is None:  # stdin: no offsets
            return SourceRecord.batch(topic, values, value_schema=STRING_SCHEMA)
        return SourceRecord.batch(
            topic,
            values,
            value_schema=STRING_SCHEMA,
            source_partition=partition,
            source_offsets=[{"position": end} for end in self._ends[start:stop]],
        )

    def wakeup(self) -> None:
        self._stopped.set()  # the poll's wait ends; stop() releases the rest

    def stop(self) -> None:
        self._stopped.set()
        stream, self._stream = self._stream, None
        if stream is not None and stream is not sys.stdin.buffer:
            stream.close()
