"""The lake's layout and file names (Confluent's HDFS sink layout).

    <store>/<topics.dir>/<topic>/<encoded partition>/<topic>+<partition>+<start>+<end>.parquet
    <store>/<topics.dir>/+tmp/<topic>/<partition>/<uuid>.parquet        files being written
    <store>/<logs.dir>/<topic>/<partition>/commit.intent               a commit in flight

`start` and `end` are the first and last log offsets of the records in the file,
zero-padded (`filename.offset.zero.pad.width`) so names sort by offset. Because both
are in the name, the files themselves say how far a partition got: the largest `end`
over a topic partition's files is its last published offset, and a restarted task
resumes after it. Topic names cannot contain `+` ... but they may contain dots and
dashes, so a name is parsed from the right.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["EXTENSION", "TMP_DIR", "FileName", "file_name", "parse_file_name"]

EXTENSION = ".parquet"
TMP_DIR = "+tmp"
_NAME = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<start>\d+)\+(?P<end>\d+)\.parquet$")


class FileName(NamedTuple):
    topic: str
    partition: int
    start: int
    end: int


def file_name(topic: str, partition: int, start: int, end: int, pad: int) -> str:
    return f"{topic}+{partition}+{start:0{pad}d}+{end:0{pad}d}{EXTENSION}"


def parse_file_name(name: str) -> FileName | None:
    """The parts of a committed file's name, or None for any other file."""
    m = _NAME.match(name)
    if m is None:
        return None
    return FileName(m["topic"], int(m["partition"]), int(m["start"]), int(m["end"]))
