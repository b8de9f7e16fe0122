"""FileStreamSink: appends each record's value as a line to a file (or stdout).

Kafka's configs (`file`, `topics`). Each value is one line, written as Kafka's
FileStreamSinkTask writes it (`println(record.value())`): a string as it is, null as
`null`, anything else in Java's text form (`connect.api.text.java_string`: a map as
`{some_key=0}`, a struct as `Struct{id=1,name=x}`, `true`, `1.0E10`), so a pipeline
moved from Kafka writes the same bytes. Text is UTF-8, an unpaired surrogate as `?`
(Java's PrintStream does the same). Bytes values are written as they are: Kafka would
print `[B@<identity hash>`, which no reader can use. Each `put()`
goes to the OS in one write, so lines show up as soon as they are consumed (Kafka's
sink writes through an unbuffered stream too). `flush()` (called
before every offset commit) flushes and fsyncs the file, so a committed offset never
points past lines a crash could lose; after a crash the lines since the last commit
are written again (at-least-once, as in Kafka), after a newline that ends a line the
crash cut short (Kafka's sink glues the next record to it).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO

from connect.api import (
    ConfigDef,
    ConfigType,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
    java_string,
)

__all__ = ["FileStreamSinkConnector", "FileStreamSinkTask"]

_log = logging.getLogger(__name__)

CONFIG = ConfigDef().define(
    "file",
    ConfigType.STRING,
    None,
    None,
    Importance.HIGH,
    "Destination filename. If not specified, the standard output will be used",
)


class FileStreamSinkConnector(SinkConnector):
    VERSION = "0.1.0"

    def config(self) -> ConfigDef:
        return CONFIG

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self._props = dict(props)

    def task_class(self) -> type:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]  # one file, one writer

    def stop(self) -> None:
        return None

    def alter_offsets(
        self, props: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        return True  # offsets live only in the consumer group


def _line(record: SinkRecord) -> bytes:
    value = record.value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value) + b"\n"
    return java_string(value, record.value_schema).encode(errors="replace") + b"\n"


class FileStreamSinkTask(SinkTask):
    VERSION = "0.1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.filename: str | None = CONFIG.parse(props)["file"] or None
        self._out: IO[bytes] = (
            open(self.filename, "ab", buffering=0)  # noqa: SIM115
            if self.filename
            else sys.stdout.buffer
        )
        if self.filename:
            self._end_a_torn_line()

    def _end_a_torn_line(self) -> None:
        """A file that does not end with a newline ends in a write a crash cut short (a
        SIGKILL can stop a write at a page boundary); those records are delivered again
        after it, since their offsets were not committed. Without a newline the first of
        them would be glued to the fragment, making one line of two; so the fragment is
        ended, and said (it is not cut: the file may be someone's, not only ours)."""
        size = os.fstat(self._out.fileno()).st_size
        if size == 0:
            return
        with open(self.filename, "rb") as f:  # type: ignore[arg-type]
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return
        self._out.write(b"\n")
        _log.warning(
            "%s ended in a partial line (a write cut short by a crash?): ended it with a "
            "newline; the records after the last commit are written again below it",
            self.filename,
        )

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        values = [r.value for r in records]
        if all(type(v) is str for v in values):
            data = ("\n".join(values) + "\n").encode(errors="replace")  # the common case, in C
        else:
            data = b"".join(map(_line, records))
        view = memoryview(data)
        while view:  # a raw write may be partial
            written = self._out.write(view)
            view = view[written or 0 :]
        if not self.filename:
            self._out.flush()

    def flush(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._out.flush()
        if self.filename:
            os.fsync(self._out.fileno())

    def stop(self) -> None:
        if self.filename and not self._out.closed:
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
