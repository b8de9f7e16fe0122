"""Source offsets, per connector and source partition (Kafka's `connect-offsets`).

Record format, as Kafka Connect writes it: key JSON `["<connector>", {partition}]`,
value JSON `{offset}`, null = the partition's offset was removed. Keys are written
canonically (sorted, compact) so compaction and lookups agree on equal partitions.

Fencing (distributed mode): a commit carries the writer's epoch — the generation its
worker runs — in the record header `tributary.epoch` (a header, so the key and value
stay Kafka's). A reader ignores a commit whose epoch is below the highest it has seen
for that source partition, so once a task's new owner has committed, a zombie's late
commit cannot move the offset back. Records without the header (Kafka Connect's, a
standalone worker's) count as epoch 0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from connect.storage.table import Table

__all__ = ["EPOCH_HEADER", "OffsetStore", "encode_offsets", "partition_key"]

EPOCH_HEADER = "tributary.epoch"


def partition_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    return json.dumps([connector, partition], sort_keys=True, separators=(",", ":")).encode()


class OffsetStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._offsets: dict[bytes, tuple[str, dict[str, Any], dict[str, Any]]] = {}
        self._epochs: dict[bytes, int] = {}

    def start(self) -> None:
        self._table.start(self._apply, headers=True)

    def _apply(self, key: bytes, value: bytes | None, headers: tuple = ()) -> None:
        try:
            connector, partition = json.loads(key)
        except (ValueError, TypeError):
            return  # not ours: ignore, as Kafka does for malformed keys
        canonical = partition_key(connector, partition)
        epoch = _epoch(headers)
        with self._lock:
            if epoch < self._epochs.get(canonical, 0):
                return  # Why: a worker that lost this task wrote it (see the docstring)
            self._epochs[canonical] = epoch
            if value is None:
                self._offsets.pop(canonical, None)
            else:
                self._offsets[canonical] = (connector, partition, json.loads(value))

    def refresh(self) -> None:
        """Apply what other workers wrote since the last look (a task about to start
        on this worker resumes from its previous owner's last commit)."""
        self._table.refresh()

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        entry = self._offsets.get(partition_key(connector, partition))
        return None if entry is None else dict(entry[2])

    def get_all(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        self._table.refresh()
        with self._lock:
            return [(p, dict(o)) for c, p, o in self._offsets.values() if c == connector]

    def put(
        self,
        connector: str,
        offsets: Mapping[bytes, tuple[Mapping[str, Any], Mapping[str, Any] | None]],
        *,
        epoch: int | None = None,
    ) -> None:
        """Write offsets given as {partition_key: (partition, offset or None)}: a task's
        commit with its worker's `epoch` (0 standalone), an operator's edit with None."""
        if epoch is None:
            self._table.refresh()  # the latest epochs, whoever wrote them
            epoch = self._edit_epoch(offsets)
        self._table.write(*encode_offsets(offsets, epoch))

    def _edit_epoch(self, keys: Iterable[bytes]) -> int:
        """The epoch of a write that is no task's (an operator's edit, a deletion): the
        highest seen for those partitions, so that it applies."""
        with self._lock:
            return max((self._epochs.get(k, 0) for k in keys), default=0)

    def delete_connector(self, connector: str) -> None:
        doomed = [(key, None) for key, (c, _p, _o) in list(self._offsets.items()) if c == connector]
        epoch = self._edit_epoch(k for k, _ in doomed)
        self._table.write(doomed, ((EPOCH_HEADER, str(epoch).encode()),) if epoch else ())

    def stop(self) -> None:
        self._table.stop()


def encode_offsets(
    offsets: Mapping[bytes, tuple[Mapping[str, Any], Mapping[str, Any] | None]], epoch: int
) -> tuple[list[tuple[bytes, bytes | None]], tuple[tuple[str, bytes], ...]]:
    """The offsets topic's records for {partition_key: (partition, offset or None)}:
    (key, value) pairs and the headers each carries. One encoding for the store's own
    writes and for an exactly-once task's, which appends them in its transaction."""
    items = [
        (
            key,
            None
            if offset is None
            else json.dumps(offset, sort_keys=True, separators=(",", ":")).encode(),
        )
        for key, (_partition, offset) in offsets.items()
    ]
    headers = () if not epoch else ((EPOCH_HEADER, str(epoch).encode()),)
    return items, headers


def _epoch(headers: tuple) -> int:
    for name, value in headers:
        if name == EPOCH_HEADER and value:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0
