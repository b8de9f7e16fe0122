"""A FileLog topic's metadata file, `topic.json`: its partition count and its config
overrides, and the in-memory entry a FileLog keeps per open topic.

Why a module of its own: the file is the topic's existence (a directory without it is
a topic being created or deleted, see docs/log-format.md), and every admin operation of
FileLog reads or rewrites it; keeping its format in one place keeps FileLog about
what it does with topics rather than how one is stored."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from log.config import TopicConfig
from log.errors import UnknownTopicOrPartitionError
from log.fsutil import read_text, write_atomic
from log.partition import Partition

__all__ = ["TOPIC_FILE", "OpenTopic", "has_topic_file", "read_meta", "write_meta"]

TOPIC_FILE = "topic.json"


class OpenTopic:
    """A topic FileLog has open: its config, its partitions as opened (None until
    first used) and the metadata file's mtime, by which another process's change of
    the topic is noticed."""

    __slots__ = ("config", "mtime", "name", "partitions")

    def __init__(self, name: str, config: TopicConfig, count: int, mtime: int) -> None:
        self.name = name
        self.config = config
        self.partitions: list[Partition | None] = [None] * count
        self.mtime = mtime


def has_topic_file(directory: Path) -> bool:
    """Whether `directory` holds a topic (its metadata file is written last when a
    topic is created and removed first when it is deleted)."""
    return (directory / TOPIC_FILE).exists()


def write_meta(directory: Path, partitions: int, overrides: Mapping[str, object]) -> None:
    """Write the metadata file atomically (a reader sees the old or the new one)."""
    meta = {"partitions": partitions, "config": dict(overrides)}
    write_atomic(directory / TOPIC_FILE, json.dumps(meta, indent=1, sort_keys=True).encode())


def read_meta(directory: Path, name: str) -> tuple[int, dict[str, object], int]:
    """The partition count, config overrides and file mtime of topic `name` stored in
    `directory`; UnknownTopicOrPartitionError when there is no such topic."""
    path = directory / TOPIC_FILE
    try:
        mtime = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        raise UnknownTopicOrPartitionError(name) from None
    text = read_text(path)
    if text is None:
        raise UnknownTopicOrPartitionError(name)
    meta = json.loads(text)
    return int(meta["partitions"]), dict(meta.get("config", {})), mtime
