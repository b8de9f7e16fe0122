"""Consumer-group offsets, kept in the compacted internal topic `__consumer_offsets`.

Key: JSON `["<group>", "<topic>", <partition>]`; value: JSON
`{"offset": n, "metadata": "...", "commit_timestamp": ms}`; a null value (tombstone)
forgets the entry. Every process rebuilds the table by reading the topic from where
it last stopped, so commits made by other processes are seen on the next fetch.

Transactions may write commits too (`TransactionalProducer.send_offsets_to_transaction`,
Kafka's sendOffsetsToTransaction): the table is read read_committed, so an offset
sent in a transaction counts once the transaction commits, and never if it aborts.

Commit protocol:
  1. The caller (FileLog.commit_offsets) fsyncs the data partitions named.
  2. One batch holding every entry of the commit is appended and fsynced, so a
     commit is all-or-nothing.
  3. The local table catches up by reading the topic (the log's order decides
     which of two racing commits wins).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from log.errors import TopicExistsError
from log.partition_read import READ_COMMITTED
from log.records import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from log.filelog import FileLog

__all__ = ["OFFSETS_TOPIC", "GroupOffsets", "encode_commit"]

OFFSETS_TOPIC = "__consumer_offsets"
_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": 64 * 1024 * 1024}

_Key = tuple[str, str, int]


def encode_commit(
    group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int], now: int
) -> tuple[list[bytes | None], list[bytes | None]]:
    """The keys and values of the records that commit `offsets` for `group`."""
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    for tp, oam in offsets.items():
        if isinstance(oam, int):
            oam = OffsetAndMetadata(oam)
        if oam.offset < 0:
            raise ValueError(f"cannot commit negative offset {oam.offset} for {tp}")
        keys.append(json.dumps([group, tp.topic, tp.partition]).encode())
        values.append(
            json.dumps(
                {
                    "offset": oam.offset,
                    "metadata": oam.metadata,
                    "commit_timestamp": oam.commit_timestamp or now,
                }
            ).encode()
        )
    return keys, values


class GroupOffsets:
    """The group → partition → committed offset table of one FileLog."""

    def __init__(self, log: FileLog) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._table: dict[_Key, OffsetAndMetadata] = {}
        self._position = 0
        self._ready = False

    def _ensure_topic(self) -> None:
        if self._ready:
            return
        with contextlib.suppress(TopicExistsError):
            self._log.create_topic(OFFSETS_TOPIC, 1, config=_TOPIC_CONFIG)
        self._ready = True

    def _catch_up(self) -> None:
        """Read what was appended since our last look. Under self._lock."""
        self._ensure_topic()
        part = self._log.partition(OFFSETS_TOPIC, 0)
        end = part.latest_offset()
        position = max(self._position, part.log_start_offset)
        while position < end:
            records = part.read(position, max_bytes=4 << 20, isolation_level=READ_COMMITTED)
            after = getattr(records, "next_offset", records[-1].offset + 1 if records else position)
            if after <= position:
                break  # nothing more, or an open transaction: stop before it
            for rec in records:
                group, topic, partition = json.loads(rec.key)  # type: ignore[arg-type]
                key = (group, topic, int(partition))
                if rec.value is None:
                    self._table.pop(key, None)
                else:
                    value = json.loads(rec.value)
                    self._table[key] = OffsetAndMetadata(
                        offset=int(value["offset"]),
                        metadata=str(value.get("metadata", "")),
                        commit_timestamp=int(value.get("commit_timestamp", 0)),
                    )
            position = after
        self._position = position

    def commit(self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | int]) -> None:
        if not offsets:
            return
        keys, values = encode_commit(group, offsets, self._log.clock())
        self._append(keys, values)

    def _append(self, keys: list[bytes | None], values: list[bytes | None]) -> None:
        with self._lock:
            self._ensure_topic()
            part = self._log.partition(OFFSETS_TOPIC, 0)
            part.append(values, keys=keys)
            part.flush()
            self._catch_up()

    def ensure_topic(self) -> None:
        """Create the topic if missing (a transaction may write to it first)."""
        with self._lock:
            self._ensure_topic()

    def fetch(
        self, group: str, partitions: Sequence[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        with self._lock:
            self._catch_up()
            if partitions is None:
                return {
                    TopicPartition(t, p): v for (g, t, p), v in self._table.items() if g == group
                }
            out = {}
            for tp in partitions:
                value = self._table.get((group, tp.topic, tp.partition))
                if value is not None:
                    out[tp] = value
            return out

    def delete_group(self, group: str) -> None:
        with self._lock:
            self._catch_up()
            doomed = [k for k in self._table if k[0] == group]
        if doomed:
            self._append([json.dumps(list(k)).encode() for k in doomed], [None] * len(doomed))

    def delete(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        """Forget the group's committed offsets of these partitions."""
        keys = [json.dumps([group, tp.topic, tp.partition]).encode() for tp in partitions]
        if keys:
            self._append(keys, [None] * len(keys))

    def forget_topic(self, topic: str) -> None:
        """Forget every group's committed offsets of a deleted topic (as Kafka's group
        coordinator does). Why: a topic created again under the same name starts at
        offset 0, and an old committed offset would skip its first records."""
        with self._lock:
            self._catch_up()
            doomed = [k for k in self._table if k[1] == topic]
        if doomed:
            self._append([json.dumps(list(k)).encode() for k in doomed], [None] * len(doomed))

    def groups(self) -> list[str]:
        with self._lock:
            self._catch_up()
            return sorted({g for g, _, _ in self._table})
