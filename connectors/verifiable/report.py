"""Where the verifiable connectors say what they did: one JSON object per line.

Kafka's verifiable tasks print their events to stdout, and its system tests collect
the lines that parse as JSON. Ours do the same by default; with `report.file` set, a
task appends to that file instead, so several tasks (threads or processes) can share
one file: each task opens its own descriptor with O_APPEND and hands the kernel whole
lines, one `write` per batch of lines, so lines never interleave or tear.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from connect.api import ConfigDef, ConfigType, Importance, Struct

__all__ = ["REPORT_FILE_CONFIG", "ReportWriter", "define_report_file", "plain"]

REPORT_FILE_CONFIG = "report.file"
_STDOUT_LOCK = threading.Lock()  # println is atomic per line in Java; so is this


def define_report_file(config: ConfigDef) -> ConfigDef:
    """Declare `report.file` on a verifiable connector's ConfigDef."""
    return config.define(
        REPORT_FILE_CONFIG,
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "File each task appends its JSON event lines to (created if missing; tasks may "
        "share it). If not specified, the standard output will be used",
    )


def plain(value: Any) -> Any:
    """A record key or value as JSON can hold it (structs as objects)."""
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return value


def _encode(events: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(e, separators=(",", ":"), default=str).encode() + b"\n" for e in events
    )


class ReportWriter:
    """Appends event lines to a file (O_APPEND, whole lines) or to stdout."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._closed = False
        self._lock = threading.Lock()  # stop() may come from another thread
        self._fd: int | None = None
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def write(self, events: Iterable[Mapping[str, Any]]) -> None:
        data = _encode(events)
        if not data or self._closed:
            return
        if self._fd is None:
            with _STDOUT_LOCK:
                sys.stdout.write(data.decode())
                sys.stdout.flush()
            return
        with self._lock:
            if self._fd is None:
                return
            view = memoryview(data)
            while view:  # a regular file takes the whole write; loop in case it does not
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Later writes are dropped (a late commit_record after stop, say)."""
        with self._lock:
            self._closed = True
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
