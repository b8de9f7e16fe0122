"""What a source task reads next: the objects of the bucket it owns, in order.

RESTORE_BACKUP: objects S3Sink wrote (names.py) are grouped by their original topic
partition; a partition's objects are read in (start offset, key) order, which is the
order the sink wrote them. A partition belongs to task `(crc32(topic) + partition) %
tasks`, so the partitions of one topic spread over the tasks. Its source partition is
`{"topic", "partition"}`; the offset after each poll is `{"object", "start",
"position", "complete"}`, so a restart skips the objects before it and `position`
records of it.

GENERIC: every object under `topics.dir` whose key (below the prefix) fully matches
a `topic.regex.list` regex, in key order; a key belongs to task `crc32(key) % tasks`.
Each object is its own source partition `{"object": key}` with offset
`{"position", "complete"}`, so objects that appear later, wherever they sort, are
still read, and finished ones are never read again.

`refresh()` lists the bucket again (the task calls it every `s3.poll.interval.ms`);
objects already queued or done are not queued twice.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connectors.s3.config import SourceSettings
from connectors.s3.names import parse_key, topic_prefix
from connectors.s3.store import Store

__all__ = ["Catalog", "Work"]

OffsetLookup = Callable[[Mapping[str, Any]], dict[str, Any] | None]


@dataclass(slots=True)
class Work:
    """One object to read: where its records go and where to start in it."""

    key: str
    topic: str
    partition: int | None
    source_partition: dict[str, Any]
    start: int
    skip: int


class Catalog:
    def __init__(
        self, settings: SourceSettings, store: Store, extension: str, offsets: OffsetLookup
    ) -> None:
        self._s = settings
        self._store = store
        self._ext = extension
        self._offsets = offsets
        self._seen: set[str] = set()
        # RESTORE_BACKUP: per (topic, partition), its queue and committed cursor.
        self._queues: dict[tuple[str, int], list[tuple[int, str, str]]] = {}
        self._cursors: dict[tuple[str, int], tuple[int, str, int, bool] | None] = {}
        self._generic: deque[Work] = deque()
        self._rr: deque[tuple[str, int]] = deque()

    def _mine(self, name: str, partition: int = 0) -> bool:
        owner = (zlib.crc32(name.encode()) + partition) % self._s.task_count
        return owner == self._s.task_id

    def refresh(self) -> int:
        """List the bucket; returns how many objects were queued."""
        return self._refresh_generic() if self._s.generic else self._refresh_restore()

    # ------------------------------------------------------------ restore

    def _refresh_restore(self) -> int:
        layout = self._s.layout
        added = 0
        for info in self._store.list(topic_prefix(layout)):
            if info.key in self._seen:
                continue
            if info.size == 0:
                # S3Sink never completes an empty object: this is a torn PutObject
                # (SeaweedFS shows one when the writer died before the body), the last
                # of its partition until the sink's replay replaces it. Not seen yet.
                continue
            name = parse_key(layout, info.key, self._ext)
            if name is None:
                continue
            tp = (name.topic, name.partition)
            if not self._mine(name.topic, name.partition):
                continue
            self._seen.add(info.key)
            if tp not in self._cursors:
                committed = self._offsets({"topic": tp[0], "partition": tp[1]})
                self._cursors[tp] = (
                    (
                        int(committed["start"]),
                        str(committed["object"]),
                        int(committed["position"]),
                        bool(committed["complete"]),
                    )
                    if committed
                    else None
                )
                self._queues[tp] = []
                self._rr.append(tp)
            cursor = self._cursors[tp]
            if cursor is not None and (name.start, name.key) < (cursor[0], cursor[1]):
                continue
            if cursor is not None and name.key == cursor[1] and cursor[3]:
                continue
            self._queues[tp].append((name.start, name.key, name.topic))
            added += 1
        for queue in self._queues.values():
            queue.sort()
        return added

    # ------------------------------------------------------------ generic

    def _refresh_generic(self) -> int:
        prefix = topic_prefix(self._s.layout)
        added = 0
        for info in self._store.list(prefix):
            if info.key in self._seen:
                continue
            relative = info.key[len(prefix) :]
            topic = next(
                (t for t, regex in self._s.topic_regexes if regex.fullmatch(relative)), None
            )
            if topic is None or not self._mine(info.key):
                continue
            self._seen.add(info.key)
            partition = {"object": info.key}
            committed = self._offsets(partition) or {}
            if committed.get("complete"):
                continue
            self._generic.append(
                Work(info.key, topic, None, partition, 0, int(committed.get("position", 0)))
            )
            added += 1
        return added

    # --------------------------------------------------------------- next

    def next(self) -> Work | None:
        """The next object to read (partitions take turns), or None."""
        if self._s.generic:
            return self._generic.popleft() if self._generic else None
        for _ in range(len(self._rr)):
            tp = self._rr[0]
            self._rr.rotate(-1)
            queue = self._queues[tp]
            if not queue:
                continue
            start, key, topic = queue.pop(0)
            cursor = self._cursors[tp]
            skip = cursor[2] if cursor is not None and cursor[1] == key else 0
            self._cursors[tp] = None
            return Work(key, topic, tp[1], {"topic": tp[0], "partition": tp[1]}, start, skip)
        return None
